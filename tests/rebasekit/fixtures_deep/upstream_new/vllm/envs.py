import os

VLLM_USE_V2_RUNNER = os.getenv("VLLM_USE_V2_RUNNER") == "1"
