"""Settings of the media path: object store, upload limits, ASR and OCR (sections `media`, `asr`, `ocr` of
baton.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from config.base import Section

MediaKind = Literal["image", "audio"]


class S3StoreConfig(Section):
    endpoint_url: str = Field(default="", description="S3-compatible endpoint; empty = the AWS default for the region.")
    bucket: str = Field(default="baton-media", min_length=3)
    region: str = "us-east-1"
    prefix: str = Field(default="", description="Prepended to every object key inside the bucket.")


class ObjectStoreConfig(Section):
    backend: Literal["local", "s3"] = Field(description="Registry name of the object store backend.")
    local_dir: str = Field(default="", description="Folder of the local backend; empty = $BATON_STATE_DIR/media.")
    s3: S3StoreConfig = Field(
        default_factory=S3StoreConfig, description="Credentials come from the usual AWS environment/config."
    )


class MediaConfig(Section):
    object_store: ObjectStoreConfig
    public_base_url: str = Field(
        default="", description="Origin put before source_url (e.g. https://baton.example); empty = a path."
    )
    max_bytes: dict[MediaKind, int] = Field(description="Upload size cap per file_type.")
    max_image_pixels: int = Field(gt=0, description="width x height cap, checked from the header before decoding.")
    max_audio_s: float = Field(gt=0, description="Audio duration cap (seconds), enforced while decoding.")
    decode_timeout_s: float = Field(default=10.0, gt=0, description="An upload whose decode runs longer is refused.")
    decode_workers: int = Field(
        default=2, gt=0, description="Threads of the upload checks' own pool (decodes, store writes) per replica."
    )
    decode_waiting: int = Field(
        default=4, ge=0, description="Uploads that may wait for a decode thread; one more is refused (503 overloaded)."
    )
    image_formats: list[str] = Field(description="Sniffed image formats accepted (png, jpeg, webp, bmp, gif).")
    audio_formats: list[str] = Field(description="Sniffed audio formats accepted (wav, mp3, m4a, webm, ogg, flac).")

    @model_validator(mode="after")
    def _positive_limits(self) -> MediaConfig:
        if set(self.max_bytes) != {"image", "audio"} or min(self.max_bytes.values()) <= 0:
            raise ValueError("media.max_bytes needs a positive limit for both 'image' and 'audio'.")
        return self


class AsrConfig(Section):
    model_path: str = Field(
        default="",
        description="CTranslate2 Whisper folder; empty = the packaged base model joined under the state dir.",
    )
    device: Literal["cpu", "cuda", "auto"] = Field(
        default="cpu", description="CTranslate2 device (auto: a GPU when there is one)."
    )
    compute_type: str = Field(
        default="int8", description="CTranslate2 compute type (int8, int8_float16, float16, float32)."
    )
    beam_size: int = Field(gt=0)
    language: str = Field(description="Spoken language code; empty = detect per file.")
    initial_prompt: str = Field(
        default="", description="Decoder prompt (e.g. one that asks for simplified characters)."
    )
    temperature: float = Field(
        ge=0, description="Sampling temperature; a single value means no slow temperature fallback."
    )
    vad_filter: bool = Field(description="Drop non-speech with the packaged Silero VAD before decoding.")
    no_speech_threshold: float = Field(
        ge=0,
        le=1,
        description="Whisper skips a window whose no-speech probability is above this"
        " and whose log-probability is low.",
    )
    max_compression_ratio: float = Field(
        gt=0, description="A segment whose text compresses better than this (a repetition loop) is dropped."
    )
    cpu_threads: int = Field(gt=0, description="CTranslate2 intra-op threads per replica.")


class OcrConfig(Section):
    device: Literal["cpu", "cuda"] = Field(
        default="cpu",
        description="onnxruntime device of detection, angle and recognition (cuda needs onnxruntime-gpu).",
    )
    threads: int = Field(gt=0, description="onnxruntime intra-op threads per replica.")
    min_confidence: float = Field(ge=0, le=1, description="Recognized lines below this confidence are dropped.")
    max_side: int = Field(gt=0, description="Longer images are scaled down to this side before detection.")
    line_overlap: float = Field(
        gt=0, le=1, description="Vertical overlap share at which two boxes count as one text row."
    )
