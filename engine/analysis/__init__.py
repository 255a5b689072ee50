"""What the numbers say: analysis, the regime map, the policy arena, reports, plot data
and formatting."""
