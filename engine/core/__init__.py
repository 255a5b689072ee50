"""The core: the scenario and its fields (config), the cycle kernel and totals, what a run
gives (runs), files written whole and read bounded, per-cycle record files."""
