from ctx2static.demo import run_demo


def test_demo_runs_end_to_end_and_resumes(tmp_path, mini_corpus):
    log: list[str] = []
    table = run_demo(tmp_path / "demo", epochs=1, corpus_path=mini_corpus, echo=log.append)
    assert "sgns.bin" in table and "sgns+wordnet.bin" in table and "avg5" in table
    assert (tmp_path / "demo" / "results.md").read_text().count("|") > 20
    log.clear()
    again = run_demo(tmp_path / "demo", epochs=1, corpus_path=mini_corpus, echo=log.append)
    assert again == table
    assert sum("skipping" in line for line in log) == 2
