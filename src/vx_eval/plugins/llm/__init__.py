"""Language models behind the chat judge and the question writers: an OpenAI-compatible endpoint, or one in process."""
