"""cellscope_torch: Cellscope's trained models in plain PyTorch.

    import cellscope_torch
    model, info = cellscope_torch.load("exported/")   # a directory written by `cellscope-cli export`
    logits, state = model(x)                          # x [T, B] token ids (char_lm, word_lm)
    print(cellscope_torch.check("exported/"))         # agreement with Cellscope on the reference batch
    lm = cellscope_torch.to_torch_nn("exported/")     # rnn/gru/lstm runs: torch.nn.GRU/LSTM/RNN inside (torch_nn.py)
    cellscope_torch.save_export(model, "exported/")   # weights changed in PyTorch back: cellscope-cli import exported/

See README.md next to this file for the exported files and what each cell supports.

A cell of your own for Cellscope (`model.cell = "script"`): ``from cellscope_torch.script_cell import
save_cell`` (resources/cells/README.md); an exported script-cell run loads with ``load`` like any other
(``ScriptCell`` runs the export's copy of the TorchScript file, checked against the run's SHA-256).
"""
from .cells import CRU, GRUDT, MCRNN, MZU, Cell, GateCell, MZUBlock, family, squash
from .exported import (FORMAT_VERSION, ExportFormatError, check, load, load_tensors, logits_of,
                       read_manifest, read_vocab, reference_inputs, resolved_model, safetensors_bytes, save_export)
from .text import Tokenizer, encode, evaluate, predict, tokenize
from .script_cell import ScriptCell, ScriptCellError, ScriptMismatchError
from .models import BARE_DEFAULTS, CELL_OPTIONS, CELLS, FAMILIES, TASK_OPTIONS, TASKS, register_family, register_task, CharLM, ClozeReader, RNNSearch, SentenceModel, Seq2Seq, WordLM, build_cell, build_model, check_model_options, with_defaults
from .torch_nn import TorchNNLanguageModel, from_torch_nn, is_torch_nn, state_from_torch_nn, state_to_torch_nn, to_torch_nn

__all__ = ["load", "check", "load_tensors", "read_vocab", "reference_inputs", "logits_of", "build_model", "build_cell", "check_model_options", "CharLM", "WordLM", "SentenceModel", "ClozeReader", "Seq2Seq", "RNNSearch",
           "Cell", "GateCell", "GRUDT", "MZU", "MZUBlock", "CRU", "MCRNN", "ScriptCell", "ScriptCellError",
           "ScriptMismatchError", "CELLS", "family", "squash", "to_torch_nn", "TorchNNLanguageModel",
           "state_to_torch_nn", "state_from_torch_nn", "from_torch_nn", "is_torch_nn", "save_export",
           "safetensors_bytes", "encode", "evaluate", "tokenize", "predict", "Tokenizer", "FORMAT_VERSION", "ExportFormatError", "read_manifest",
           "resolved_model", "with_defaults", "BARE_DEFAULTS", "CELL_OPTIONS", "TASK_OPTIONS", "FAMILIES", "TASKS",
           "register_family", "register_task"]
