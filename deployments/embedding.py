"""Sentence embeddings from a local HF / sentence-transformers encoder: tokenizer → transformer → pooling → L2 norm.

One implementation for training and serving, on two runtimes chosen by config: `torch` (any device) and
`onnx` (onnxruntime on the CPU, the same graph exported once from torch; on this 2-core machine a batch-1
pass takes about half the time of torch). Both run the pooling of the folder's sentence-transformers config
(mean or CLS) and give the same vectors to within float noise. A running pass can be stopped from another
thread (`RunControl.stop`): onnxruntime terminates the run, torch stops at the next transformer layer. The folder's
graph and its ONNX export: deployments/pooled_encoder.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from deployments.devices import onnx_providers, torch_device
from deployments.pooled_encoder import export_onnx, max_length, onnx_dir, pooled_module, query_prefix
from deployments.thread_priority import lower_priority, park, started_threads, unpark

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

Runtime = Literal["torch", "onnx"]


class PassStopped(Exception):
    """The pass was stopped before it finished (every request in it was cancelled or out of time)."""


class RunControl:
    """Lets another thread stop one encoder pass; `stop()` before the pass starts makes it not start."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self._ort_options = None

    def stop(self) -> None:
        self.stopped.set()
        if self._ort_options is not None:
            self._ort_options.terminate = True


class SentenceEncoder:
    """`encode(texts)` → L2-normalized float32 vectors, with the query prefix of the folder (`query_prefix`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        runtime: Runtime = "torch",
        threads: int | None = None,
        batch_size: int = 32,
        state_dir: Path | None = None,
        device: str = "cpu",
        idle_threads: int = 0,
        idle_nice: int = 0,
        idle_park: bool = False,
    ) -> None:
        """`idle_threads` (onnx only; more than `threads`): a second session of that many threads for
        `encode(..., quiet=True)` — a pass that may use every core because nothing else runs; its worker threads
        run at niceness `idle_nice` (Linux; `quiet_workers` names them) and, with `idle_park`, wait between passes
        under SCHED_IDLE (one quiet pass at a time, as the caller's contract)."""
        from transformers import AutoTokenizer

        # the device first: a GPU config on a machine without one stops here, before anything loads
        providers = onnx_providers(device, "models.device") if runtime == "onnx" else None
        device = torch_device(device, "models.device") if runtime == "torch" else device
        self.path = Path(path)
        self.runtime = runtime
        self.quiet_workers: list[int] = []  # the quiet session's own worker threads (Linux thread ids)
        self._park = idle_park
        self._batch_size = batch_size
        self._max_length = max_length(self.path)
        self._tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        self._prefix = query_prefix(self.path)
        if runtime == "onnx":
            import onnxruntime as ort

            model = export_onnx(self.path, onnx_dir(self.path, state_dir or self.path.parent))
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or 0
            options.inter_op_num_threads = 1
            self._ort = ort
            self._session = ort.InferenceSession(str(model), options, providers=providers)
            self._quiet_session = None
            if idle_threads > (threads or 0) > 0:
                # its workers spin between the graph's ops (onnxruntime's default): without spinning two threads were no
                # faster than one at batch 1 here (13.7 against 13.5 ms), as each op waited for a worker to wake. They
                # spin ~35 ms after a pass, which is why only a quiet replica's pass uses this session, and why they
                # run at `idle_nice`: that spin then takes only CPU the rest of the turn does not want.
                quiet = ort.SessionOptions()
                quiet.intra_op_num_threads = idle_threads
                quiet.inter_op_num_threads = 1
                self._quiet_session, workers = started_threads(
                    lambda: ort.InferenceSession(str(model), quiet, providers=providers)
                )
                self.quiet_workers = lower_priority(workers, idle_nice) if idle_nice else workers
                if idle_park:
                    park(self.quiet_workers)
            self.dim = int(self._session.get_outputs()[0].shape[-1] or self._probe_dim())
        elif runtime == "torch":
            import torch

            if threads:
                torch.set_num_threads(threads)
            self._torch = torch
            self._device = device
            self._model = pooled_module(self.path).to(device)
            self._layers_hooked = False
            self._local = threading.local()  # each batch thread checks its own pass
            transformer = cast("PreTrainedModel", self._model.transformer)
            self.dim = int(transformer.config.hidden_size)
        else:
            raise ValueError(f"Unknown encoder runtime '{runtime}'; choose torch or onnx.")

    def _probe_dim(self) -> int:
        return int(self.encode(["x"]).shape[1])

    @property
    def has_quiet_session(self) -> bool:
        return self.runtime == "onnx" and self._quiet_session is not None

    def encode(self, texts: list[str], control: RunControl | None = None, *, quiet: bool = False) -> np.ndarray:
        """`quiet`: run on the idle-threads session, when there is one."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        control = control or RunControl()
        out = []
        for start in range(0, len(texts), self._batch_size):
            if control.stopped.is_set():
                raise PassStopped("stopped before the pass")
            chunk = [self._prefix + t for t in texts[start : start + self._batch_size]]
            out.append(self._run(chunk, control, quiet))
        return np.concatenate(out).astype(np.float32, copy=False)

    def _run(self, texts: list[str], control: RunControl, quiet: bool = False) -> np.ndarray:
        if self.runtime == "onnx":
            session = self._session
            if quiet and self._quiet_session is not None:
                session = self._quiet_session
            else:
                quiet = False
            batch = self._tokenizer(
                texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="np"
            )
            options = self._ort.RunOptions()
            control._ort_options = options
            if control.stopped.is_set():
                raise PassStopped("stopped before the pass")
            parked = quiet and self._park
            if parked:  # the pass runs at the workers' niceness; their spin after it, under SCHED_IDLE
                unpark(self.quiet_workers)
            try:
                return cast(
                    np.ndarray,
                    session.run(
                        None,
                        {
                            "input_ids": batch["input_ids"].astype(np.int64),
                            "attention_mask": batch["attention_mask"].astype(np.int64),
                        },
                        options,
                    )[0],
                )
            except Exception as exc:
                if control.stopped.is_set():
                    raise PassStopped("stopped during the pass") from exc
                raise
            finally:
                if parked:
                    park(self.quiet_workers)
                control._ort_options = None
        torch = self._torch
        batch = self._tokenizer(texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="pt")
        self._hook_layers(control)
        with torch.inference_mode():
            vectors = self._model(batch["input_ids"].to(self._device), batch["attention_mask"].to(self._device))
        return cast(np.ndarray, vectors.cpu().numpy())

    def _hook_layers(self, control: RunControl) -> None:
        """Before each transformer layer, stop if asked: a cancelled pass costs at most one layer more."""
        self._local.control = control
        if self._layers_hooked:
            return
        layers = getattr(getattr(self._model.transformer, "encoder", None), "layer", None) or []

        def check(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
            current = getattr(self._local, "control", None)
            if current is not None and current.stopped.is_set():
                raise PassStopped("stopped during the pass")

        for layer in layers:
            layer.register_forward_pre_hook(check)
        self._layers_hooked = True
