"""cellscope_torch: Python helpers for Cellscope (imports nothing heavy here; import the modules,
e.g. ``from cellscope_torch.script_cell import save_cell``)."""
