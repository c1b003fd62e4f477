"""Statistics shared by the gate, the comparisons and the evals: one implementation each, low in the
import order (numpy and scipy only, nothing of the package)."""
