"""The offline robot-program toolkit: block catalog, module-step model, text form, compile,
decompile, validation and canonical comparison of Blockly robot programs.

Nothing here needs an LLM or a network; lxml and xmlschema load only when XML is touched.
"""

from __future__ import annotations

from .canonical import canonical_diff, canonical_equal, canonical_form
from .catalog import (
    AttributeSpec,
    BlockSpec,
    Catalog,
    FieldSpec,
    InputSpec,
    TextSpec,
    catalog_json_schema,
    default_catalog,
    load_catalog,
)
from .compile import compile_program, to_program
from .decompile import decompile
from .problems import Problem, errors_only
from .steps import Program, Step, TaskSteps, build_program, without_editor_attributes
from .validate import validate_steps, validate_task, validate_xml

__all__ = [
    "AttributeSpec",
    "BlockSpec",
    "Catalog",
    "FieldSpec",
    "InputSpec",
    "Problem",
    "Program",
    "Step",
    "TaskSteps",
    "TextSpec",
    "build_program",
    "canonical_diff",
    "canonical_equal",
    "canonical_form",
    "catalog_json_schema",
    "compile_program",
    "decompile",
    "default_catalog",
    "errors_only",
    "load_catalog",
    "to_program",
    "validate_steps",
    "validate_task",
    "validate_xml",
    "without_editor_attributes",
]
