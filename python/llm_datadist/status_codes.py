"""LLMStatusCode's members: the C++ status table with the vendor Python package's names.

The vendor's C++ headers and its Python package spell two codes differently
(LLM_WAIT_PROC_TIMEOUT / LLM_WAIT_PROCESS_TIMEOUT, LLM_SEQ_LEN_OVER_LIMIT /
LLM_SEQ_LENOVERLIMIT).  Python code is written against the Python spelling,
so it comes first (the canonical name of the value) and the C++ spelling
follows as an alias.  LLM_UNKNOWN_ERROR (-1) is the vendor package's own
member; LLM_UNKNOWN is this package's earlier name for it.
"""

# C++ name -> the vendor Python package's name, where they differ.
PYTHON_NAMES = {
    "LLM_WAIT_PROC_TIMEOUT": "LLM_WAIT_PROCESS_TIMEOUT",
    "LLM_SEQ_LEN_OVER_LIMIT": "LLM_SEQ_LENOVERLIMIT",
}

UNKNOWN_ERROR = -1


def status_members(table):
    """(name, value) pairs for enum.IntEnum from _native.status_table() rows (name, value, description)."""
    members = []
    for name, value, _ in table:
        python_name = PYTHON_NAMES.get(name)
        if python_name is not None:
            members.append((python_name, value))
        members.append((name, value))
    members.append(("LLM_UNKNOWN_ERROR", UNKNOWN_ERROR))
    members.append(("LLM_UNKNOWN", UNKNOWN_ERROR))
    return members
