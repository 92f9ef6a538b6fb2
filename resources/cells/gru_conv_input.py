#!/usr/bin/python3
"""A GRU whose input first passes through a CRU-style causal convolution of width 3, as a
Cellscope script cell (the CRU paper's shallow fusion, eqs. 5-8, with a causal window).

    c_t = relu(W_c [x_{t-2}; x_{t-1}; x_t] + b_c)        (x_{<0} = 0)
    h_t = GRU(h_{t-1}, c_t)                                (gru_equations.py's equations)

A script cell sees one x_t per call, so the window's last two inputs are part of the state:
state = [h, x_{t-1}, x_{t-2}], state_sizes = [H, I, I]; the zero initial state is the zero
padding before the first input. The output is state[0] = h.

    /usr/bin/python3 gru_conv_input.py OUT.pt [--input-size 64] [--hidden 256] [--channels 64]
"""

import argparse
import math
import os
import sys
from typing import Dict, List, Tuple

import torch
from torch import Tensor


class GRUConvInput(torch.nn.Module):
    input_size: int
    hidden_size: int
    state_sizes: List[int]
    channels: int

    def __init__(self, input_size: int, hidden_size: int, channels: int):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.channels = channels
        self.state_sizes = [hidden_size, input_size, input_size]  # h, x_{t-1}, x_{t-2}
        H, C = hidden_size, channels
        self.w_conv = torch.nn.Parameter(torch.empty(C, 3 * input_size))  # columns: x_{t-2}, x_{t-1}, x_t
        self.b_conv = torch.nn.Parameter(torch.empty(C))
        self.w_ih = torch.nn.Parameter(torch.empty(3 * H, C))
        self.w_hh = torch.nn.Parameter(torch.empty(3 * H, H))
        self.b_ih = torch.nn.Parameter(torch.empty(3 * H))
        self.b_hh = torch.nn.Parameter(torch.empty(3 * H))
        self.reset_parameters()

    @torch.jit.export
    def reset_parameters(self) -> None:
        kc = 1.0 / math.sqrt(3.0 * float(self.input_size))  # fan-in of the convolution
        k = 1.0 / math.sqrt(float(self.hidden_size))
        with torch.no_grad():
            self.w_conv.uniform_(-kc, kc)
            self.b_conv.uniform_(-kc, kc)
            self.w_ih.uniform_(-k, k)
            self.w_hh.uniform_(-k, k)
            self.b_ih.uniform_(-k, k)
            self.b_hh.uniform_(-k, k)

    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:
        h, x1, x2 = state[0], state[1], state[2]
        window = torch.cat([x2, x1, x], 1)  # [B, 3I], oldest first
        c = torch.relu(torch.addmm(self.b_conv, window, self.w_conv.t()))
        gi = torch.addmm(self.b_ih, c, self.w_ih.t())
        gh = torch.addmm(self.b_hh, h, self.w_hh.t())
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        h_new = n + z * (h - n)
        return [h_new, x, x1], {"candidate": n, "gate": 1 - z, "reset": r, "conv": c}


def _save(module: torch.nn.Module, path: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "..", "..", "packaging", "python"), os.path.join(here, "..", "python")):
        if os.path.isdir(os.path.join(p, "cellscope_torch")) and p not in sys.path:
            sys.path.insert(0, p)
    try:
        from cellscope_torch.script_cell import save_cell
    except ImportError:  # an installed copy without the source tree: save without the helper's checks
        torch.jit.save(torch.jit.script(module), path)
        print(f"{path}: saved (cellscope_torch not found: Cellscope checks the file when it loads it)")
        return
    info = save_cell(module, path)
    print(f"{path}: input_size {info['input_size']}, hidden_size {info['hidden_size']}, "
          f"state_sizes {info['state_sizes']}, records {', '.join(info['names'])}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--input-size", type=int, default=64, help="model.embed of the run (quick-gru: 64)")
    ap.add_argument("--hidden", type=int, default=256, help="model.hidden of the run (quick-gru: 256)")
    ap.add_argument("--channels", type=int, default=64, help="convolution channels C")
    a = ap.parse_args()
    _save(GRUConvInput(a.input_size, a.hidden, a.channels), a.out)
