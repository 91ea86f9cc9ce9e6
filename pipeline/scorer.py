"""Exact top-k of a decoder's logits, for the LM substitutes (SemGloVe md)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from ctx2static.pipeline.bf16 import fast_bf16


@dataclass
class Scorer:
    """Exact top-k of the logits x @ W.T + b over a vocabulary, scanning block maxima, not whole rows.

    The product's columns are laid out in blocks of ``BLOCK`` tokens: the top c entries of a row lie
    in its c blocks with the largest maxima, so the selection reads those blocks only. Where bf16
    products are fast (:func:`fast_bf16`) the product is bf16 and gives candidates: they are rescored
    in float32, first the best ``k + FIRST``, ``k + MARGIN`` only where needed; a row is kept only
    when a rounding-error bound proves that no other column can beat its k-th candidate, and the rare
    rows that fail are recomputed in float32. The result equals a float32 top-k up to float32 rounding
    of the scores. Elsewhere the blocked product is float32 and its block selection is the top-k
    itself; small vocabularies take a plain float32 top-k.
    """

    weight: torch.Tensor  # float32 [V, d]
    bias: torch.Tensor | None  # float32 [V]
    token_ids: torch.Tensor | None  # the vocabulary id of each row (None: row i is token i)
    low: torch.Tensor  # bf16 or float32 [d, BLOCK * n_blocks]; column j * n_blocks + b is row b * BLOCK + j
    low_bias: torch.Tensor | None  # [BLOCK * n_blocks], same dtype and layout
    w_norm: float  # max_j ||w_j||
    b_max: float  # max_j |b_j|

    BLOCK = 32  # tokens per block of the blocked product
    # the rows each stage settles, measured: Results page, topk
    FIRST = 16  # bf16 candidates beyond k rescored for every row (most rows end here)
    MARGIN = 32  # bf16 candidates beyond k in all (the few rows left need the float32 product)
    CHUNK = 256  # rows per product (keeps the [rows, V] block in cache)

    @classmethod
    def from_weights(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        token_ids: torch.Tensor | None = None,
        blocked: bool | None = None,
    ) -> Scorer:
        """Hold rows ``token_ids`` (all when None) of ``weight`` and ``bias`` in float32, and blocked.

        The blocked copy is bfloat16 when ``blocked`` is true (default: where that is fast,
        :func:`fast_bf16`), else float32.
        """
        w = weight.detach().float()
        b = None if bias is None else bias.detach().float()
        if token_ids is not None:
            w = w.index_select(0, token_ids)
            b = None if b is None else b.index_select(0, token_ids)
        w = w.contiguous()
        b_max = 0.0 if b is None else float(b.abs().max())
        w_norm = float(w.norm(dim=1).max())
        v, d = w.shape
        nb = -(-v // cls.BLOCK)
        dtype = torch.bfloat16 if (fast_bf16(w.device) if blocked is None else blocked) else torch.float32
        pad = nb * cls.BLOCK - v
        wp = torch.cat([w, w.new_zeros(pad, d)]).view(nb, cls.BLOCK, d).transpose(0, 1).reshape(-1, d)
        low = wp.T.to(dtype).contiguous()
        low_bias = None
        if b is not None:
            bp = torch.cat([b, b.new_zeros(pad)]).view(nb, cls.BLOCK).T.reshape(-1)
            low_bias = bp.to(dtype).contiguous()
        return cls(w, b, token_ids, low, low_bias, w_norm, b_max)

    def _exact(self, x: torch.Tensor) -> torch.Tensor:
        logits = x @ self.weight.T
        return logits if self.bias is None else logits + self.bias

    def _rescore(self, x: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
        """Float32 logits of the candidate columns ``cand`` [n, m] of each row of ``x`` [n, d]."""
        w = self.weight.index_select(0, cand.reshape(-1)).view(*cand.shape, -1)
        exact = torch.bmm(w, x.unsqueeze(-1)).squeeze(-1)
        return exact if self.bias is None else exact + self.bias[cand]

    @cached_property
    def _buffer(self) -> torch.Tensor:
        """A reused [CHUNK, V] product buffer: a fresh one per chunk costs page faults."""
        return self.low.new_empty(self.CHUNK, self.low.shape[1])

    def _product(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The blocked logits of ``xs`` as [n, BLOCK, n_blocks] (padding at -inf) and their block maxima."""
        n, blk = len(xs), self.BLOCK
        nb = self.low.shape[1] // blk
        buf = self._buffer[:n]
        xl = xs.to(self.low.dtype)
        if self.low_bias is None:
            torch.mm(xl, self.low, out=buf)
        else:
            torch.addmm(self.low_bias, xl, self.low, out=buf)
        low = buf.view(n, blk, nb)
        pad = nb * blk - self.weight.shape[0]
        if pad:
            low[:, blk - pad :, nb - 1] = -torch.inf
        return low, low.amax(1).float()

    def _select(
        self, low: torch.Tensor, block_max: torch.Tensor, c: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The c largest blocked logits per row and their columns, best first.

        They lie in the c blocks with the largest maxima, so only those blocks are searched.
        """
        n, blk = low.shape[:2]
        _, blocks = block_max.topk(c, dim=-1, sorted=False)
        vals = low.gather(2, blocks.unsqueeze(1).expand(n, blk, c)).float().view(n, blk * c)
        cand_low, pos = vals.topk(c, dim=-1)
        return cand_low, blocks.gather(1, pos % c) * blk + pos.div(c, rounding_mode="floor")

    def topk(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores and token ids [N, k] of the k largest logits per row of ``x`` [N, d], best first."""
        scores, rows = self._top_rows(x, k)
        return scores, rows if self.token_ids is None else self.token_ids[rows]

    def _top_rows(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`topk` with row numbers of ``weight`` in place of token ids."""
        pairs: list[tuple[torch.Tensor, torch.Tensor]]
        if self.low.shape[1] <= (k + self.MARGIN) * self.BLOCK:
            pairs = [self._exact(xs).topk(k, dim=-1) for xs in x.split(self.CHUNK)]
        elif self.low.dtype == torch.float32:
            pairs = [self._select(*self._product(xs), k) for xs in x.split(self.CHUNK)]
        else:
            return self._bf16_top_rows(x, k)
        return torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])

    def _bf16_top_rows(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_top_rows` from bf16 candidates, float32 rescoring and the rounding-error proof."""
        u = torch.finfo(self.low.dtype).eps / 2  # unit roundoff of the candidate product
        scores, ids = [], []
        for xs in x.split(self.CHUNK):
            n = len(xs)
            low, block_max = self._product(xs)
            err = (2 * u + u * u + xs.shape[1] * 2.0**-23) * xs.norm(dim=1) * self.w_norm + u * self.b_max
            top = torch.empty(n, k, device=xs.device)
            ids_s = torch.empty(n, k, dtype=torch.long, device=xs.device)
            todo = torch.arange(n, device=xs.device)
            for m in (k + self.FIRST, k + self.MARGIN):  # rescore m candidates; the (m+1)-th bounds the rest
                rows = (low, block_max) if len(todo) == n else (low[todo], block_max[todo])
                cand_low, cand = self._select(*rows, m + 1)
                t, j = self._rescore(xs[todo], cand[:, :m]).topk(k, dim=-1)
                top[todo], ids_s[todo] = t, cand.gather(1, j)
                # every column outside the first m candidates has low <= lo, hence exact <= bound
                lo = cand_low[:, m]
                bound = lo + u * lo.abs() / (1 - u) + err[todo]
                todo = todo[t[:, -1] <= bound]
                if not len(todo):
                    break
            if len(todo):
                top[todo], ids_s[todo] = self._exact(xs[todo]).topk(k, dim=-1)
            scores.append(top)
            ids.append(ids_s)
        return torch.cat(scores), torch.cat(ids)
