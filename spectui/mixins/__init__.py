"""The groups of actions and handlers SpectuiApp (spectui.app) is made of, one mixin each.

``base.AppBase`` holds the state they share; ``views`` mounts and shows the views; ``runs``
starts and cancels runs, sweeps and arenas; ``clipboard`` copies (F4); ``pin`` pins and
compares (F9); ``presets`` loads and saves presets; ``screens`` opens help and Calibrate.
"""
