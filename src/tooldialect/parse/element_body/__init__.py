"""The element body (``ElementBody``): one element per argument, values as raw text typed by the
tool's schema. ``params`` reads a call's parameter elements, ``value_end`` finds where a value
ends, ``value_text`` says what it means, ``nested_values`` reads child elements back into JSON,
and ``escaped_call`` reads a whole call the model wrote JSON-escaped. ``body_kinds`` registers
``plan_element_body``, ``read_element_call`` and ``element_other_syntaxes``."""

from __future__ import annotations

from .escaped_call import read_element_call
from .params import element_other_syntaxes, plan_element_body

__all__ = ["element_other_syntaxes", "plan_element_body", "read_element_call"]
