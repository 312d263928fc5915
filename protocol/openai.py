"""The OpenAI-compatible boundary (`/v1/chat/completions`, `/v1/models`): request and response types only.

The subset of the chat-completions protocol the Planner serves: messages (text content), max_tokens /
max_completion_tokens, temperature, stream, and response_format text / json_object / json_schema (vLLM structured
outputs). Fields the protocol has and Baton does not use are accepted and ignored, as OpenAI-compatible servers
do; a value Baton cannot honour (n > 1, a non-text content part) is a 422 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Lenient):
    type: Literal["text"]
    text: str


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class JsonSchemaFormat(_Lenient):
    name: str = Field(default="answer", max_length=64)
    schema_: dict[str, Any] = Field(alias="schema", description="The JSON schema the answer must follow.")
    strict: bool | None = None


class TextFormat(_Lenient):
    type: Literal["text"]


class JsonObjectFormat(_Lenient):
    type: Literal["json_object"]


class JsonSchemaResponseFormat(_Lenient):
    type: Literal["json_schema"]
    json_schema: JsonSchemaFormat


ResponseFormat = Annotated[TextFormat | JsonObjectFormat | JsonSchemaResponseFormat, Field(discriminator="type")]


class ChatCompletionRequest(_Lenient):
    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1, max_length=256)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool = False
    response_format: ResponseFormat | None = None
    n: Literal[1] = Field(default=1, description="One choice per request.")

    def token_limit(self, default: int) -> int:
        return self.max_completion_tokens or self.max_tokens or default


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: str | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "baton"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
