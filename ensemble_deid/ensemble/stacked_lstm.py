"""Stacked BiLSTM-CRF at token level [KIM20].

Input: only the members' predicted tags. Each member's tag goes through its
own 10-d embedding; the concatenation feeds 2 stacked BiLSTM layers of 100
units per direction (dropout 0.25 between and after them), a linear layer and
a CRF (pytorch-crf). RMSProp, learning rate 0.001, 25 epochs. Early stopping
(on by default) holds out ``validation_fraction`` of the fitting documents,
whole patients at a time, and keeps the weights of the epoch with the lowest
validation loss (patience ``patience`` epochs). Runs on the GPU when one is
present, else the CPU; torch is imported only when the method is used.
The BiLSTM layers and the CRF loss and decoding are the base neural taggers'
(``taggers/neural/network.py``): half the CPU time of torch's packed LSTM
and pytorch-crf's loss (ensemble version 3).
"""
from __future__ import annotations

import io
import random

import numpy as np

from .base import OPERATING_POINT
from .tokens import TokenMetaLearner, TokenTable
from ..taggers.constraints import DEVICE, MAX_COUNT, MAX_RATE, MAX_SIZE, THREADS, Interval
from ..taggers.neural.base import torch_threads

PAD, UNKNOWN = 0, 1


class StackedLSTM(TokenMetaLearner):
    """BiLSTM-CRF over the members' tags.

    Parameters
    ----------
    embedding_dim, hidden_size, num_layers, dropout, learning_rate, epochs :
        [KIM20]: 10, 100, 2, 0.25, 0.001 (RMSProp), 25.
    batch_size : int
        Sequences (sentences) per update.
    max_length : int
        Longer sentences are cut into pieces of this many tokens.
    early_stopping : bool
    validation_fraction : float
    patience : int
    device : str or None
        "cpu", "cuda", ...; None picks the GPU when available.
    threads : int or None
        CPU threads for torch during fit and prediction (None, the default:
        torch's own setting, one per core; torch's setting is restored after).
        ``threads=1`` spends far less CPU on a loaded machine (against
        revision 538a320 in benchmarks/ensembles/bench_stacked.py: 5.3x less CPU with
        threads=1 at commit 23750dc, 1.4x with the default) but, over 25
        epochs, sums taken in another order give a slightly different network (MEDDOCAN dev F1
        0.9642 with one thread against the published 0.9644 with two), so a
        set ``threads`` enters the cache key; None stays out of it.
    random_state : int
    operating_point : None or dict
        Thresholds on a token's CRF posterior probability of not being O,
        ``{"*": t}`` and/or per category (None: the Viterbi path). Chosen by
        ``GridSearch`` for objectives other than plain F1.
    """

    name = "stacked-lstm"
    description = "token-level BiLSTM-CRF over members' tags (10-d embedding per member)"

    _parameter_constraints = {
        "embedding_dim": [Interval(int, 1, MAX_SIZE)], "hidden_size": [Interval(int, 1, MAX_SIZE)],
        "num_layers": [Interval(int, 1, 100)], "dropout": [Interval(float, 0, 1, closed="left")],
        "learning_rate": [Interval(float, 0, MAX_RATE, closed="right")], "epochs": [Interval(int, 1, MAX_COUNT)],
        "batch_size": [Interval(int, 1, MAX_COUNT)], "max_length": [Interval(int, 1, MAX_COUNT)], "early_stopping": [bool],
        "validation_fraction": [Interval(float, 0, 1, closed="left")], "patience": [Interval(int, 0, MAX_COUNT)],
        "device": [None, DEVICE], "threads": [None, THREADS], "operating_point": [OPERATING_POINT],
    }
    scored = True
    sweeps_base = True
    machine_params = ("device", "threads")  # a bundle's are not used: the loading machine's (Tagger.loaded_params)

    def __init__(self, embedding_dim=10, hidden_size=100, num_layers=2, dropout=0.25, learning_rate=0.001,
                 epochs=25, batch_size=32, max_length=200, early_stopping=True, validation_fraction=0.1,
                 patience=5, device=None, threads=None, random_state=0, operating_point=None):
        self._store_params(locals())

    # --- data --------------------------------------------------------------------
    def _sequences(self, table: TokenTable, with_gold: bool):
        """(inputs (T, m) int64, gold (T,) int64 or None, doc, start) per sequence."""
        index = self._input_index(table, self.input_tags_, UNKNOWN)
        out_index = {t: k for k, t in enumerate(self.tags_)}
        gold_map = np.array([out_index.get(t, 0) for t in table.vocab.tags], dtype=np.int64)
        seqs = []
        for d, a, b in table.sequences(int(self.max_length)):
            x = index[table.member_ids[d][a:b]]
            y = gold_map[table.gold_ids[d][a:b]] if with_gold else None
            seqs.append((x, y, d, a))
        return seqs

    def _batches(self, seqs, shuffle: bool, rng: random.Random | None = None):
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i][0]))  # similar lengths together
        batches = [order[i:i + int(self.batch_size)] for i in range(0, len(order), int(self.batch_size))]
        if shuffle and rng is not None:
            rng.shuffle(batches)
        return batches

    def _tensors(self, seqs, batch, torch, device):
        m = self.n_inputs_
        longest = max(len(seqs[i][0]) for i in batch)
        x = np.full((len(batch), longest, m), PAD, dtype=np.int64)
        y = np.zeros((len(batch), longest), dtype=np.int64)
        mask = np.zeros((len(batch), longest), dtype=bool)
        for r, i in enumerate(batch):
            xi, yi = seqs[i][0], seqs[i][1]
            x[r, :len(xi)] = xi
            mask[r, :len(xi)] = True
            if yi is not None:
                y[r, :len(yi)] = yi
        # Member j's ids are offset into one shared embedding table.
        x = x + (np.arange(m) * self.n_input_tags_)[None, None, :]
        return (torch.as_tensor(x, device=device), torch.as_tensor(y, device=device),
                torch.as_tensor(mask, device=device))

    # --- model ----------------------------------------------------------------------
    def _network(self, torch):
        # The base taggers' BiLSTM and CRF steps (taggers/neural/network.py):
        # torch's packed-sequence LSTM and pytorch-crf's loss slice one time
        # step at a time, and their backward pass dominated a CPU epoch.
        from torchcrf import CRF

        from ..taggers.neural.network import BiLSTM, UniformDropout, crf_log_likelihood, crf_marginals, viterbi

        nn = torch.nn
        m, emb, hid = self.n_inputs_, int(self.embedding_dim), int(self.hidden_size)
        learner = self

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(m * learner.n_input_tags_, emb, padding_idx=PAD)
                self.layers = nn.ModuleList(BiLSTM(m * emb if i == 0 else 2 * hid, hid)
                                            for i in range(int(learner.num_layers)))
                self.drop = UniformDropout(float(learner.dropout))  # between the layers and after the last
                self.out = nn.Linear(2 * hid, len(learner.tags_))
                self.crf = CRF(len(learner.tags_), batch_first=True)  # its transition parameters

            def emissions(self, x, mask):
                h = self.embed(x).flatten(2)
                lengths = mask.sum(1)
                for i, layer in enumerate(self.layers):
                    h = layer(self.drop(h) if i else h, lengths)
                return self.out(self.drop(h))

            def _crf(self):
                return self.crf.start_transitions, self.crf.transitions, self.crf.end_transitions

            def loss(self, x, y, mask):
                return -crf_log_likelihood(self.emissions(x, mask), y, mask, *self._crf()).mean()

            def marginals(self, x, mask):
                return crf_marginals(self.emissions(x, mask), mask, *self._crf())

            def decode(self, x, mask):
                best = viterbi(self.emissions(x, mask), mask, *self._crf())
                return [row[:n] for row, n in zip(best, mask.sum(1).tolist())]

        return Net()

    def _device(self, torch):
        if self.device:
            return torch.device(self.device)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def _split_validation(self, table: TokenTable) -> tuple[list[int], list[int]]:
        """Training and validation document indices, whole patients held out."""
        n = len(table.documents)
        groups = sorted({d.group for d in table.documents})
        if not self.early_stopping or len(groups) < 2:
            return list(range(n)), []
        rng = random.Random(self.random_state)
        rng.shuffle(groups)
        n_val = max(1, int(round(len(groups) * float(self.validation_fraction))))
        held = set(groups[:n_val])
        train = [i for i, d in enumerate(table.documents) if d.group not in held]
        val = [i for i, d in enumerate(table.documents) if d.group in held]
        return (train, val) if train else (list(range(n)), [])

    def _fit_prepared(self, table: TokenTable) -> None:
        with torch_threads(self.threads):
            self._fit_network(table)

    def _fit_network(self, table: TokenTable) -> None:
        import torch

        self._output_tags(table)
        seen = set()
        for ids in table.member_ids:
            seen.update(np.unique(ids).tolist())
        # Input ids: 0 padding, 1 unknown, then every member tag seen in fit.
        self.input_tags_ = {table.vocab.tags[i]: k + 2 for k, i in enumerate(sorted(seen))}
        self.n_input_tags_ = len(self.input_tags_) + 2
        self.n_inputs_ = table.n_members
        torch.manual_seed(int(self.random_state))
        rng = random.Random(self.random_state)
        device = self._device(torch)
        train_idx, val_idx = self._split_validation(table)
        train = self._sequences(table.subset(train_idx), True)
        val = self._sequences(table.subset(val_idx), True) if val_idx else []
        net = self._network(torch).to(device)
        opt = torch.optim.RMSprop(net.parameters(), lr=float(self.learning_rate))
        best, best_state, waited = float("inf"), None, 0
        self.history_ = []
        for epoch in range(int(self.epochs)):
            net.train()
            total = 0.0
            for batch in self._batches(train, True, rng):
                x, y, mask = self._tensors(train, batch, torch, device)
                opt.zero_grad()
                loss = net.loss(x, y, mask)
                loss.backward()
                opt.step()
                total += loss.item() * len(batch)
            record = {"epoch": epoch + 1, "train_loss": total / max(len(train), 1)}
            if val:
                net.eval()
                with torch.no_grad():
                    vloss = sum(float(net.loss(*self._tensors(val, b, torch, device))) * len(b)
                                for b in self._batches(val, False)) / len(val)
                record["validation_loss"] = vloss
                if vloss < best:
                    best, waited = vloss, 0
                    best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                else:
                    waited += 1
            self.history_.append(record)
            if val and waited >= int(self.patience):
                break
        if best_state is not None:
            net.load_state_dict(best_state)
        net.eval()
        self.network_ = net

    # Saving: the network's state_dict in torch's own format, read back with
    # weights_only=True into a network rebuilt from the parameters.
    def _fitted_state(self) -> dict:
        import torch

        state = super()._fitted_state()
        buf = io.BytesIO()
        torch.save({k: v.detach().cpu() for k, v in state.pop("network_").state_dict().items()}, buf)
        state["network_"] = buf.getvalue()
        return state

    def _restore_state(self, state: dict) -> None:
        import torch

        state = dict(state)
        weights = torch.load(io.BytesIO(state.pop("network_")), map_location="cpu", weights_only=True)
        super()._restore_state(state)
        net = self._network(torch)
        net.load_state_dict(weights)
        self.network_ = net.to(self._device(torch)).eval()

    def _predict_native(self, table: TokenTable) -> list[np.ndarray]:
        with torch_threads(self.threads):
            return self._decode(table)

    def _decode(self, table: TokenTable) -> list[np.ndarray]:
        import torch

        net = self.network_
        device = next(net.parameters()).device
        seqs = self._sequences(table, False)
        out = [np.zeros(len(d.tokens), dtype=np.int64) for d in table.documents]
        with torch.no_grad():
            for batch in self._batches(seqs, False):
                x, _, mask = self._tensors(seqs, batch, torch, device)
                for i, path in zip(batch, net.decode(x, mask)):
                    _, _, d, a = seqs[i]
                    out[d][a:a + len(path)] = path
        return out

    def _marginals(self, table: TokenTable) -> list[np.ndarray]:
        with torch_threads(self.threads):
            return self._posteriors(table)

    def _posteriors(self, table: TokenTable) -> list[np.ndarray]:
        import torch

        net = self.network_
        device = next(net.parameters()).device
        seqs = self._sequences(table, False)
        out = [np.zeros((len(d.tokens), len(self.tags_))) for d in table.documents]
        with torch.no_grad():
            for batch in self._batches(seqs, False):
                x, _, mask = self._tensors(seqs, batch, torch, device)
                probs = net.marginals(x, mask).double().cpu().numpy()
                for r, i in enumerate(batch):
                    _, _, d, a = seqs[i]
                    n = len(seqs[i][0])
                    out[d][a:a + n] = probs[r, :n]
        return out
