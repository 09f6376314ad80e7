class OpenAIServingChat:
    async def chat_completion_stream_generator(self, request, result_generator):
        yield request
