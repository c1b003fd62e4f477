"""Regenerate the committed subset files: ``python -m pytest_llmbench.evals.bfcl``."""

from pytest_llmbench.evals.bfcl.cases import (
    DATA,
    QUOTAS_205,
    QUOTAS_CPU,
    SINGLE_TURN_205,
    SUBSET_205,
    SUBSET_CPU,
    SUBSET_SEED,
    choose_subset,
    write_subset,
)

if __name__ == "__main__":
    DATA.mkdir(exist_ok=True)
    ids_205 = choose_subset(QUOTAS_205)
    write_subset(SUBSET_205, ids_205, QUOTAS_205, SUBSET_SEED)
    single_turn = choose_subset(SINGLE_TURN_205)
    write_subset(SUBSET_CPU, choose_subset(QUOTAS_CPU, within=single_turn), QUOTAS_CPU, SUBSET_SEED)
    print(f"wrote {SUBSET_205} and {SUBSET_CPU}")
