import gzip

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gamma

from ctx2static.errors import UserError
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.solver import (
    log_student_t_kernel,
    objective,
    psi,
    retrofit_matrix,
    retrofit_vectors,
    step,
)
from ctx2static.vectors import Vectors


def _c_nu(nu):
    return 2 * np.pi * (gamma((nu + 1) / 2) / (np.sqrt(nu * np.pi) * gamma(nu / 2))) ** 2


@pytest.mark.parametrize("nu", [1.0, 2.5, 30.0, 100.0])
def test_kernel_normaliser_and_monotone(nu):
    d2 = np.linspace(0, 9, 50) ** 2
    g = np.exp(log_student_t_kernel(d2, nu, 0.7))
    assert g[0] == pytest.approx(_c_nu(nu), rel=1e-12)
    assert np.all(np.diff(g) < 0)


def test_kernel_hand_value_and_no_overflow():
    # nu=1: C = 2 pi (1/pi)^2 = 2/pi; (1 + d^2/(sigma nu))^-(nu+1) = (1 + 2/2)^-2 = 1/4
    assert np.exp(log_student_t_kernel(np.array([2.0]), 1.0, 2.0))[0] == pytest.approx(1 / (2 * np.pi))
    big = log_student_t_kernel(np.array([0.0, 1e8]), 1e4, 1.0)
    assert np.all(np.isfinite(big)) and big[1] < big[0]


def _three_words():
    # a -> {b, c}, b -> {a}, c has no neighbours (Faruqui's directed use of the lexicon)
    q0 = np.array([[1, 0], [0, 1], [2, 2]], np.float32)
    adj = sp.csr_matrix(np.array([[0, 1, 1], [1, 0, 0], [0, 0, 0]], np.float32))
    return q0, adj


def test_faruqui_hand_computed_two_jacobi_steps():
    q0, adj = _three_words()
    cfg = RetrofitConfig(method=Method.FARUQUI, iterations=1)
    # a: (1*(1,0) + 1/2 (0,1) + 1/2 (2,2)) / (1 + 1) = (1, 0.75);  b: ((0,1) + (1,0)) / 2
    np.testing.assert_allclose(retrofit_matrix(q0, adj, cfg), [[1, 0.75], [0.5, 0.5], [2, 2]])
    cfg = RetrofitConfig(method=Method.FARUQUI, iterations=2)  # Jacobi: iteration 2 reads iteration 1's
    np.testing.assert_allclose(retrofit_matrix(q0, adj, cfg), [[1.125, 0.625], [0.5, 0.875], [2, 2]])


def test_graph_hand_computed_step():
    q0, adj = _three_words()
    cfg = RetrofitConfig(method=Method.GRAPH, iterations=1, nu=1.0, sigma=1.0)
    # a: d^2 = 2 to b, 5 to c; g ~ (1+2)^-2, (1+5)^-2 = 1/9, 1/36 -> w = 0.8, 0.2
    # a <- ((1,0) + 0.8 (0,1) + 0.2 (2,2)) / 2 = (0.7, 0.6); b has one neighbour: w = 1
    np.testing.assert_allclose(retrofit_matrix(q0, adj, cfg), [[0.7, 0.6], [0.5, 0.5], [2, 2]], rtol=1e-6)


def _naive(q0, adj, cfg):
    """Per-word Jacobi loop written from the equations (the shape of the reference code)."""
    a, b = (cfg.alpha, 1.0) if cfg.method is Method.FARUQUI else (cfg.a, cfg.b)
    q = q0.astype(np.float64)
    for _ in range(cfg.iterations):
        new = q.copy()
        for i in range(len(q)):
            nbrs = adj.indices[adj.indptr[i] : adj.indptr[i + 1]]
            if not len(nbrs):
                continue
            if cfg.method is Method.FARUQUI:
                w = np.full(len(nbrs), 1 / len(nbrs))
            else:
                d2 = ((q[nbrs] - q[i]) ** 2).sum(1)
                g = _c_nu(cfg.nu) * (1 + d2 / (cfg.sigma * cfg.nu)) ** -(cfg.nu + 1)
                w = g / g.sum()
            new[i] = (a * q0[i] + b * w @ q[nbrs]) / (a + b)
        q = new
    return q


@pytest.mark.parametrize("method", [Method.FARUQUI, Method.GRAPH])
def test_sparse_form_matches_per_word_loop(method):
    rng = np.random.default_rng(3)
    n = 40
    dense = (rng.random((n, n)) < 0.1).astype(np.float32)
    np.fill_diagonal(dense, 0)
    adj = sp.csr_matrix(dense)
    q0 = (0.3 * rng.normal(size=(n, 6))).astype(np.float32)
    kernel = {"nu": 3.0, "sigma": 0.5} if method is Method.GRAPH else {}
    cfg = RetrofitConfig(method=method, iterations=4, **kernel)
    np.testing.assert_allclose(retrofit_matrix(q0, adj, cfg), _naive(q0, adj, cfg), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", [Method.FARUQUI, Method.GRAPH])
def test_psi_decreases_every_iteration(method):
    # triangle of synonyms (each word has two neighbours, listed both ways) plus a loner
    q0 = np.array([[1, 0, 0], [0, 1, 0], [-1, -1, 0.5], [3, 3, 3]], np.float32)
    adj = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], np.float32))
    cfg = RetrofitConfig(method=method, iterations=10)
    trace = [psi(q0, q0, adj, cfg)]
    retrofit_matrix(q0, adj, cfg, lambda _it, q: trace.append(psi(q, q0, adj, cfg)))
    reused = []  # the trace retrofit_matrix keeps itself, reusing each iteration's weights
    retrofit_matrix(q0, adj, cfg, trace=reused)
    np.testing.assert_allclose(reused, trace, rtol=1e-6)
    assert len(trace) == 11 and np.all(np.diff(trace[:6]) < 0)  # strictly, until float32 round-off
    assert np.all(np.diff(trace) <= 1e-6 * trace[0]) and trace[-1] < 0.6 * trace[0]


def test_jacobi_step_descends_for_symmetric_weights():
    # the guarantee stated in solver's docstring: symmetric w -> Psi (b halved) decreases each sweep
    rng = np.random.default_rng(7)
    for _ in range(8):
        n = int(rng.integers(3, 25))
        mask = np.triu(rng.random((n, n)) < 0.3, 1)
        sym = rng.random((n, n))
        w = sp.csr_matrix((mask + mask.T) * (sym + sym.T), dtype=np.float32)
        q0 = rng.normal(size=(n, 4)).astype(np.float32)
        q, prev = q0, objective(q0, q0, w, 1.0, 0.5)
        for _ in range(5):
            q = step(q, q0, w, 1.0, 1.0)
            cur = objective(q, q0, w, 1.0, 0.5)
            assert cur <= prev + 1e-9 * abs(prev)
            prev = cur


def _tiny_vectors():
    words = ["big", "large", "small", "little", "car", "tree"]
    rng = np.random.default_rng(0)
    return Vectors(words, rng.normal(size=(6, 8)), np.arange(6, 0, -1), {"student": "test"})


@pytest.mark.parametrize("method", [Method.FARUQUI, Method.GRAPH])
def test_synonyms_move_closer_loners_stay(tmp_path, method):
    lex = tmp_path / "lex.txt"
    lex.write_text("big large\nlarge big\nsmall little\nlittle small\ncar automobile\n")
    v = _tiny_vectors()
    out, trace = retrofit_vectors(v, [lex], RetrofitConfig(method=method, normalize=False))
    for x, y in [("big", "large"), ("small", "little")]:
        assert np.linalg.norm(out[x] - out[y]) < 0.5 * np.linalg.norm(v[x] - v[y])
    for loner in ("car", "tree"):  # 'automobile' is out of vocabulary
        assert np.array_equal(out[loner], v[loner])
    assert out.counts.tolist() == v.counts.tolist() and len(trace) == 11
    normed, _ = retrofit_vectors(v, [lex], RetrofitConfig(method=method))
    np.testing.assert_allclose(normed["tree"], v["tree"] / np.linalg.norm(v["tree"]), rtol=1e-6)


def test_meta_records_each_retrofit(tmp_path):
    lex = tmp_path / "lex.txt"
    lex.write_text("big large\n")
    once, _ = retrofit_vectors(_tiny_vectors(), [lex], RetrofitConfig())
    twice, _ = retrofit_vectors(once, [lex, "wordnet"], RetrofitConfig(method="graph", nu=5))
    assert twice.meta["student"] == "test"
    first, second = twice.meta["retrofit"]
    assert first["method"] == "faruqui" and first["edges"] == 1 and first["lowercase_match"]
    assert second["lexicons"] == [str(lex), "wordnet"] and second["config"]["nu"] == 5


def test_config_rejects_bad_values():
    with pytest.raises(UserError, match="--nu 0.0 must be > 0"):
        RetrofitConfig(nu=0)
    with pytest.raises(UserError, match="--method nope: choose one of faruqui, graph"):
        RetrofitConfig(method="nope")


def test_cli_end_to_end(tmp_path, cli_main):
    src = tmp_path / "in.txt"
    _tiny_vectors().save(src)
    lex = tmp_path / "lex.txt.gz"
    with gzip.open(lex, "wt") as fh:
        fh.write("big large\nlarge big\n")
    out = tmp_path / "out.bin"
    code, _, err = cli_main(
        "retrofit", src, "-l", lex, "-l", "wordnet", "--method", "graph", "-o", out, "--iterations", 3
    )
    assert code == 0, err
    v, w = Vectors.load(src), Vectors.load(out)
    assert w.words == v.words and w.meta["student"] == "test"
    assert w.meta["retrofit"][0]["config"]["iterations"] == 3
    unit = v.unit()
    assert np.linalg.norm(w["big"] - w["large"]) < np.linalg.norm(unit[0] - unit[1])
    np.testing.assert_allclose(w["tree"], unit[5], rtol=1e-5)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"big large\n\xff\n")
    code, _, err = cli_main("retrofit", src, "-l", bad, "-o", tmp_path / "x.txt")
    assert code == 2 and f"error: {bad}: line 2 is not valid UTF-8" in err
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize(
    ("method", "option", "value", "reader"),
    [(Method.GRAPH, "alpha", 0.5, "faruqui"), (Method.FARUQUI, "lr", 0.5, "attract-repel"),
     (Method.ATTRACT_REPEL, "iterations", 3, "faruqui/graph")],
)  # fmt: skip
def test_an_option_of_another_method_is_refused_not_ignored(method, option, value, reader):
    with pytest.raises(UserError, match=rf"^--{option} {value} must be left at its default: only {reader}"):
        RetrofitConfig(method=method, **{option: value})
    RetrofitConfig(method=method, propagate=True, ridge=0.5, normalize=False)  # every method reads these


def test_the_console_shows_only_the_options_the_method_reads():
    shown = RetrofitConfig(method=Method.FARUQUI).method_options()
    assert set(shown) == {"method", "iterations", "alpha", "propagate", "ridge", "normalize"}
