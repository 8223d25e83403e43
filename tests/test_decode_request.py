"""The public decode functions hand every argument to the run in one DecodeRequest (ttflashdecode.ops.decode.request),
each under its own name: a typo such as ``cur_pos=cur_pos_tensor`` would pass the shape tests whenever both are None,
so each function is called here with a distinct value per argument and the request it builds is read back. No
device: ``run_request`` is replaced by a recorder."""

from __future__ import annotations

import inspect

import pytest

from ttflashdecode.ops.decode import api as op_module
from ttflashdecode.ops.decode.request import DecodeRequest

# The request's name for a public argument that the functions spell differently (ttnn's names)
FIELD_OF = {"page_table_tensor": "page_table"}
ENTRY_POINTS = {
    "scaled_dot_product_attention_decode": dict(paged=False, v_from_k=False),
    "paged_scaled_dot_product_attention_decode": dict(paged=True, v_from_k=False),
    "flash_multi_latent_attention_decode": dict(paged=False, v_from_k=True),
    "paged_flash_multi_latent_attention_decode": dict(paged=True, v_from_k=True),
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_every_argument_reaches_the_request_under_its_name(name, monkeypatch):
    requests = []
    record = lambda request, return_stats: requests.append((request, return_stats))  # noqa: E731
    monkeypatch.setattr(op_module, "run_request", record)
    function = getattr(op_module, name)
    parameters = inspect.signature(function).parameters
    # a distinct value per argument (head_dim_v an int: check_entry reads it)
    values = {p: (512 if p == "head_dim_v" else object()) for p in parameters}
    positional = [values[p] for p, spec in parameters.items() if spec.kind is spec.POSITIONAL_OR_KEYWORD]
    keywords = {p: values[p] for p, spec in parameters.items() if spec.kind is spec.KEYWORD_ONLY}
    function(*positional, **keywords)
    ((request, return_stats),) = requests
    # a request of every field (the functions build it from its fields in order: api._new_request)
    assert isinstance(request, DecodeRequest) and len(request) == len(DecodeRequest._fields)
    request.check_entry()
    # return_stats says what the function returns: it travels beside the request, not in it
    assert return_stats is values.pop("return_stats")
    for argument, value in values.items():
        assert getattr(request, FIELD_OF.get(argument, argument)) is value, argument
    # what the function does not take stays at the request's default; the entry point is recorded
    taken = {FIELD_OF.get(p, p) for p in parameters} - {"return_stats"}
    for field in DecodeRequest._fields:
        if field in ENTRY_POINTS[name]:
            assert getattr(request, field) is ENTRY_POINTS[name][field], field
        elif field not in taken:
            assert getattr(request, field) == DecodeRequest._field_defaults[field], field


def test_the_request_fields_are_the_functions_arguments():
    """Every field but the entry-point flags is some public function's argument, and every argument but
    return_stats (what the function returns, beside the request) is a field: nothing is carried that no caller can
    set."""
    taken = set()
    for name in ENTRY_POINTS:
        taken |= {FIELD_OF.get(p, p) for p in inspect.signature(getattr(op_module, name)).parameters}
    assert set(DecodeRequest._fields) - {"paged", "v_from_k"} == taken - {"return_stats"}


def test_the_tensors_are_the_first_fields_in_the_fast_paths_order():
    """``DecodeRequest.tensors`` slices the request: its first fields must be the tensor arguments, in the order the
    fast path and the wrapper unpack them."""
    names = ("q", "k", "v", "cur_pos_tensor", "page_table", "attn_mask", "attention_sink", "output_tensor")
    request = DecodeRequest(**{name: object() for name in names}, scale=0.5)
    assert request.tensors == tuple(getattr(request, name) for name in names)
