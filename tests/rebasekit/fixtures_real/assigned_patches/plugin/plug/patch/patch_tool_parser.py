from vllm.serving import OpenAIServingChat


async def _patched_chat_completion_stream_generator(self, request, result_generator):
    yield self._make_usage_info(len(request))


OpenAIServingChat.chat_completion_stream_generator = _patched_chat_completion_stream_generator
