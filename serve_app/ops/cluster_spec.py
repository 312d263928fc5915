"""The cluster a RayService runs on, as data (deploy/kuberay/cluster.yaml): the image, the Secret the Orchestrator's
pods read, the head and each worker group's size, labels and GPUs. Validated at load; rendered by
serve_app.ops.kuberay."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from serve_app.ops.kuberay_posture import RAY_TOKEN_KEY, NetworkSpec, PodUser
from serve_app.ops.node_env import SECRET_ENV

STATIC_CLOUD_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PodSize(_Spec):
    cpu: str = Field(description="CPU of each pod (requests = limits), a Kubernetes quantity.")
    memory: str = Field(description="Memory of each pod, e.g. 32Gi.")
    gpus: int = Field(default=0, ge=0, description="Whole NVIDIA GPUs per pod.")


class WorkerGroup(_Spec):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    labels: dict[str, str] = Field(
        default_factory=dict, description="Ray node labels the deployments' label_selector match."
    )
    replicas: int = Field(ge=0)
    min_replicas: int = Field(ge=0)
    max_replicas: int = Field(ge=1)
    size: PodSize
    accelerator_type: str = Field(default="", description="Ray's name for the group's GPUs (L4, A100, H100...).")
    gpu_product: str = Field(
        default="", description="Node label value of nvidia.com/gpu.product the pods are placed on."
    )
    service_account: str = Field(
        default="",
        description="The pods' Kubernetes ServiceAccount, bound to a cloud role by workload identity (IRSA, GKE): "
        "how the group reaches the media bucket without static keys. No worker pod mounts a Kubernetes API token.",
    )

    @model_validator(mode="after")
    def _bounds(self) -> WorkerGroup:
        if not self.min_replicas <= self.replicas <= self.max_replicas:
            raise ValueError(f"worker group {self.name}: need min_replicas <= replicas <= max_replicas")
        if bool(self.accelerator_type) != (self.size.gpus > 0):
            raise ValueError(f"worker group {self.name}: accelerator_type goes with gpus, and only with them")
        return self


class SecretRef(_Spec):
    name: str = Field(description="The Kubernetes Secret the Orchestrator's pods read (and no other pod).")
    keys: dict[str, str] = Field(description="Environment variable -> key in the Secret.")

    @model_validator(mode="after")
    def _required(self) -> SecretRef:
        missing = [name for name in SECRET_ENV if name not in self.keys]
        if missing:
            raise ValueError(f"secret.keys must map {', '.join(missing)}: replicas read them from their environment")
        static = [name for name in STATIC_CLOUD_KEYS if name in self.keys]
        if static:
            raise ValueError(
                f"secret.keys maps {', '.join(static)}: give the groups that read the media bucket a service_account "
                "bound to a role by workload identity (IRSA, GKE workload identity) instead of static keys"
            )
        return self


class ClusterSpec(_Spec):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    namespace: str
    ray_version: str
    image: str = Field(description="Baton installed on Ray's image of ray_version, the built packs under app_root/var.")
    app_root: str = Field(pattern=r"^/", description="Where the repository's config/ and var/ are inside the image.")
    autoscaling: bool = Field(
        default=True, description="KubeRay's in-tree autoscaler sizes the worker groups to Serve's demand."
    )
    secret: SecretRef
    ray_token_secret: str = Field(
        description=f"The Secret holding Ray's cluster token under key `{RAY_TOKEN_KEY}` (authOptions.secretName)."
    )
    network: NetworkSpec
    pod_user: PodUser = PodUser()
    head: PodSize
    workers: list[WorkerGroup] = Field(min_length=1)
