"""to_torch_nn's LSTM on every torch: Debian 13's torch 2.6 runs a CPU float nn.LSTM through a oneDNN that computes
wrong values without gradients (0.26 off on a 16-unit LSTM; docs/PLATFORMS.md), so there to_torch_nn builds an
nn.LSTM that runs with oneDNN off (cellscope_torch.torch_nn.LSTM, chosen by a probe)."""
import pytest
import torch
from torch import nn

import cellscope_torch as ct
from cellscope_torch import torch_nn as tn
from cellscope_torch.cells import GateCell


def _cell(H, I=5):
    torch.manual_seed(1)
    return GateCell("lstm", I, H)


def _equations(cell, x, h, c):
    """The LSTM written out (gates i, f, g, o, as torch.nn and Cellscope order them), step by step."""
    out = []
    for t in range(x.shape[0]):
        a = x[t] @ cell.w_ih.t() + cell.b_ih + h @ cell.w_hh.t() + cell.b_hh
        i, f, g, o = a.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out.append(h)
    return torch.stack(out), h, c


@pytest.mark.parametrize("H", [16, 64])
def test_to_torch_nn_lstm_is_the_equations_without_gradients_on_this_torch(H):
    cell = _cell(H)
    lstm = ct.to_torch_nn(cell)
    assert isinstance(lstm, nn.LSTM)
    torch.manual_seed(2)
    x, h0, c0 = torch.randn(4, 3, 5), torch.randn(3, H), torch.randn(3, H)
    with torch.no_grad():
        want, hw, cw = _equations(cell, x, h0, c0)
        got, (h, c) = lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)))
    assert (got - want).abs().max().item() < 1e-5
    assert (h[0] - hw).abs().max().item() < 1e-5 and (c[0] - cw).abs().max().item() < 1e-5


def test_the_probe_is_a_bool_and_runs_once():
    first = tn.onednn_lstm_unsound()
    assert isinstance(first, bool)
    assert tn.onednn_lstm_unsound() is first


def test_where_the_probe_finds_the_defect_the_lstm_runs_with_onednn_off(monkeypatch):
    seen = []
    plain_forward = nn.LSTM.forward

    def spy(self, *args, **kwargs):
        seen.append(torch.backends.mkldnn.enabled)
        return plain_forward(self, *args, **kwargs)

    monkeypatch.setattr(nn.LSTM, "forward", spy)
    monkeypatch.setattr(tn, "_ONEDNN_LSTM_UNSOUND", True)
    lstm = ct.to_torch_nn(_cell(16))
    assert type(lstm) is tn.LSTM and isinstance(lstm, nn.LSTM) and type(lstm).__name__ == "LSTM"
    assert set(lstm.state_dict()) == set(nn.LSTM(5, 16).state_dict())
    with torch.no_grad():
        lstm(torch.randn(2, 1, 5))
    assert seen == [False]
    assert torch.backends.mkldnn.enabled  # restored after the call
    # a sound torch gets torch.nn.LSTM itself (scriptable as ever), and from_torch_nn takes either
    monkeypatch.setattr(tn, "_ONEDNN_LSTM_UNSOUND", False)
    assert type(ct.to_torch_nn(_cell(16))) is nn.LSTM
    back = ct.from_torch_nn(lstm, _cell(16))
    assert torch.equal(back.w_hh, lstm.weight_hh_l0)
