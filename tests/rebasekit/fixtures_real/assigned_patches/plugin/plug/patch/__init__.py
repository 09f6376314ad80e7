# the order vllm-ascend imports its patch modules in: the kernels first
import plug.patch.patch_triton  # noqa: F401
import plug.patch.patch_usage  # noqa: F401
import plug.patch.patch_tool_parser  # noqa: F401
import plug.patch.patch_balance  # noqa: F401
import plug.patch.patch_qwen  # noqa: F401
