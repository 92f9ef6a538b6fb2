#!/usr/bin/python3
"""A GRU written from its equations, as a Cellscope script cell (resources/cells/README.md).

    r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

The parameters have the layout of Cellscope's (and torch.nn.GRU's) GRU: w_ih [3H, I],
w_hh [3H, H], b_ih [3H], b_hh [3H], gate order (r, z, n), so weights copy 1:1 between the two.

    /usr/bin/python3 gru_equations.py OUT.pt [--input-size 64] [--hidden 256]
"""

import argparse
import math
import os
import sys
from typing import Dict, List, Tuple

import torch
from torch import Tensor


class GRUEquations(torch.nn.Module):
    input_size: int
    hidden_size: int
    state_sizes: List[int]

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.state_sizes = [hidden_size]  # state = [h]
        H = hidden_size
        self.w_ih = torch.nn.Parameter(torch.empty(3 * H, input_size))
        self.w_hh = torch.nn.Parameter(torch.empty(3 * H, H))
        self.b_ih = torch.nn.Parameter(torch.empty(3 * H))
        self.b_hh = torch.nn.Parameter(torch.empty(3 * H))
        self.reset_parameters()

    @torch.jit.export
    def reset_parameters(self) -> None:
        # torch.nn.GRU's initialisation, U(-1/sqrt(H), 1/sqrt(H)); Cellscope calls this after
        # seeding with the run's training.seed.
        k = 1.0 / math.sqrt(float(self.hidden_size))
        with torch.no_grad():
            self.w_ih.uniform_(-k, k)
            self.w_hh.uniform_(-k, k)
            self.b_ih.uniform_(-k, k)
            self.b_hh.uniform_(-k, k)

    def forward(self, x: Tensor, state: List[Tensor]) -> Tuple[List[Tensor], Dict[str, Tensor]]:
        h = state[0]
        gi = torch.addmm(self.b_ih, x, self.w_ih.t())
        gh = torch.addmm(self.b_hh, h, self.w_hh.t())
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        h_new = n + z * (h - n)  # (1 - z) n + z h
        # "gate": the weight of the candidate, 1 - z (the MZU paper's g_t, as Cellscope's GRU records it)
        return [h_new], {"candidate": n, "gate": 1 - z, "reset": r}


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
    ap.add_argument("--double", action="store_true", help="save double-precision parameters")
    a = ap.parse_args()
    m = GRUEquations(a.input_size, a.hidden)
    _save(m.double() if a.double else m, a.out)
