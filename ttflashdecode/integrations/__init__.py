"""Integrations of ttflashdecode with model frameworks (each an optional extra).

- :mod:`ttflashdecode.integrations.hf`: a transformers attention implementation ("ttflashdecode") and a device KV
  cache (``pip install .[hf]``).
"""
