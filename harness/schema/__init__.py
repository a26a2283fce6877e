"""The harness's schema: the vocabulary and the typed documents shared by the harness and the host side.

`verdicts` holds the diagnosis vocabulary (the verdict table, severities, findings, a report's assessment,
exit codes); `outcomes` the one
status vocabulary of every check (PASS, WARN, FAIL, SKIP, ERROR, NOT_RUN); `probe_document`,
`memory_document`, `stack_document` and `envelope` the documents the commands write, as records; `jsondata`
the codec that writes and reads them. refenv reads what the harness writes through these, never through a dict.
"""

from harness.schema.jsondata import DecodeError, Record, decode, decode_optional, encode, optional_key
from harness.schema.outcomes import ERROR, FAIL, NOT_RUN, OUTCOMES, PASS, SKIP, WARN, worst
from harness.schema.verdicts import (
    ANSWERS,
    ARCH_UNSUPPORTED,
    BY_CODE,
    CANNOT_TELL,
    CONFIDENCES,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    EXIT_FAILING,
    EXIT_HARNESS_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    FAILING,
    FIX_ACCESS,
    FIX_DRIVER,
    FIX_REPAIR,
    FIX_WHEEL,
    HIGH,
    LOW,
    MEDIUM,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    OTHER,
    SCHEMA,
    SCHEMA_VERSION,
    SEVERITIES,
    SEVERITY_ERROR,
    SEVERITY_INFO,
    SEVERITY_WARNING,
    TABLE,
    VERDICTS,
    Assessment,
    Diagnosis,
    Finding,
    Remedy,
    Verdict,
    exit_code_for,
    verdict_of,
)

__all__ = [
    "ANSWERS", "ARCH_UNSUPPORTED", "BY_CODE", "CANNOT_TELL", "CONFIDENCES", "CPU_WHEEL", "DRIVER_BROKEN",
    "DRIVER_TOO_OLD", "ERROR", "EXIT_FAILING", "EXIT_HARNESS_ERROR", "EXIT_INTERNAL", "EXIT_OK", "FAIL", "FAILING",
    "FIX_ACCESS", "FIX_DRIVER", "FIX_REPAIR", "FIX_WHEEL", "HIGH", "LOW", "MEDIUM", "NOT_RUN", "NOT_VISIBLE",
    "NO_DRIVER", "OK", "OTHER", "OUTCOMES", "PASS", "SCHEMA", "SCHEMA_VERSION", "SEVERITIES", "SEVERITY_ERROR",
    "SEVERITY_INFO", "SEVERITY_WARNING", "SKIP", "TABLE", "VERDICTS", "WARN", "Assessment",
    "DecodeError", "Diagnosis", "Finding", "Record", "Remedy", "Verdict", "decode", "decode_optional", "encode",
    "exit_code_for", "optional_key", "verdict_of", "worst",
]
