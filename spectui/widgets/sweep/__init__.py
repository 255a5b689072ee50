"""The Sweep view's parts (:class:`spectui.widgets.sweep_view.SweepView` composes them).

``base.SweepBase`` holds the state they share; ``choice`` the preset picker and the chosen
grid laid out before a sweep; ``grid`` the heatmap's title, rows and cells; ``status`` the
count line, the progress bar and the ETA; ``workers`` where a sweep's rows are computed (a
Dask cluster, the app's worker processes, or the sweep's thread); ``store`` the finished
rows, kept compact.
"""
