"""Sweeps: grids, plans and streamed rows, the process pool and Dask runners."""
