"""``DeviceMesh``: the ranks of a job laid out as an n-d array, a process group per dimension.

PyTorch's ``torch.distributed.device_mesh``. ``init_device_mesh("cpu", (2, 2),
mesh_dim_names=("dp", "tp"))`` arranges the world's ranks as ``arange(world).reshape(2, 2)``;
each mesh dimension has a process group per slice (``mesh.get_group("tp")`` is this rank's
row), made with ``new_group`` by every rank in the same order, as PyTorch requires.
``mesh["tp"]`` is the 1-d sub-mesh this rank lies on. DTensors (``ember.distributed.tensor``)
are placed on a mesh.
"""

from __future__ import annotations

import numpy as np

from . import distributed_c10d as _c10d

__all__ = ["DeviceMesh", "init_device_mesh"]

_CURRENT: list = []


class DeviceMesh:
    """Ranks as an n-d array ``mesh`` with a process group along each dimension."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names=None,
                 backend_override=None, _init_backend: bool = True, _groups=None):
        if not isinstance(device_type, str):
            raise TypeError(f"device_type must be a str, got {type(device_type).__name__}")
        if ":" in device_type:
            raise RuntimeError("Device type with index is not supported but got "
                               f"{device_type}. If you maintained a 'torch.device' object, "
                               "it's recommended to pass in 'device.type'.")
        arr = np.asarray(mesh.tolist() if hasattr(mesh, "tolist") and not isinstance(
            mesh, np.ndarray) else mesh)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"DeviceMesh: mesh must hold integer ranks, got {arr.dtype}")
        arr = arr.astype(np.int64)
        if len(set(arr.ravel().tolist())) != arr.size:
            raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found "
                               f"{arr.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != arr.ndim:
                raise ValueError(f"mesh_dim_names {mesh_dim_names} must have one name per "
                                 f"mesh dimension ({arr.ndim})")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError("Each mesh_dim_name must be unique. Found repeated "
                                   f"mesh_dim_name in mesh_dim_names {mesh_dim_names}")
        self.device_type = device_type
        self._mesh = arr
        self._mesh_dim_names = mesh_dim_names
        if not _c10d.is_initialized():
            raise RuntimeError("DeviceMesh needs the default process group: call "
                               "ember.distributed.init_process_group() first")
        world = _c10d.get_world_size()
        if arr.size and (arr.min() < 0 or arr.max() >= world):
            raise RuntimeError(f"DeviceMesh: mesh {arr.tolist()} names ranks outside the "
                               f"world of {world} ranks")
        self._rank = _c10d.get_rank()
        where = np.argwhere(arr == self._rank)
        self._coordinate = tuple(int(c) for c in where[0]) if len(where) else None
        self._groups = list(_groups) if _groups is not None else (
            self._init_groups() if _init_backend else [None] * arr.ndim)

    def _init_groups(self) -> list:
        """One group per mesh dimension: the slice along it that holds this rank. Every rank
        creates every slice's group, in the same order (``new_group`` is collective)."""
        arr, world = self._mesh, _c10d.get_world_size()
        groups = []
        for dim in range(arr.ndim):
            if arr.ndim == 1 and arr.size == world and (arr == np.arange(world)).all():
                groups.append(_c10d._get_default_group())  # the world itself, as PyTorch
                continue
            rows = np.moveaxis(arr, dim, -1).reshape(-1, arr.shape[dim])
            mine = None
            for row in rows:
                pg = _c10d.new_group(row.tolist())
                if self._rank in row:
                    mine = pg
            groups.append(mine)
        return groups

    # -- what the mesh is ------------------------------------------------------------------
    @property
    def mesh(self):
        import ember

        return ember.tensor(self._mesh, dtype=ember.int64)

    @property
    def mesh_dim_names(self) -> tuple | None:
        return self._mesh_dim_names

    @property
    def ndim(self) -> int:
        return self._mesh.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        return int(self._mesh.size) if mesh_dim is None else int(self._mesh.shape[mesh_dim])

    def _dim(self, mesh_dim, what: str) -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. "
                                   f"Optional kwarg `mesh_dim` needs to be specified when "
                                   f"device_mesh.ndim > 1.")
            return 0
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names or mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"{what}: mesh_dim {mesh_dim} is out of range for a "
                             f"{self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def get_group(self, mesh_dim: int | str | None = None):
        """This rank's process group along ``mesh_dim``."""
        return self._groups[self._dim(mesh_dim, "get_group")]

    def get_all_groups(self) -> list:
        return list(self._groups)

    def get_rank(self) -> int:
        return self._rank

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's coordinate along ``mesh_dim``."""
        d = self._dim(mesh_dim, "get_local_rank")
        if self._coordinate is None:
            raise RuntimeError(f"rank {self._rank} is not part of the mesh "
                               f"{self._mesh.tolist()}")
        return self._coordinate[d]

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's coordinates in the mesh (None when it is not part of it)."""
        return None if self._coordinate is None else list(self._coordinate)  # type: ignore[return-value]

    def _group_rank(self, mesh_dim: int, coordinate: int) -> int:
        """The group rank (in ``get_group(mesh_dim)``) of the rank at ``coordinate`` along
        ``mesh_dim`` on this rank's slice: groups number their ranks in sorted order, a mesh
        in its own."""
        index = list(self._coordinate)
        index[mesh_dim] = coordinate
        rank = int(self._mesh[tuple(index)])
        return _c10d.get_group_rank(self._groups[mesh_dim], rank)

    def _is_current_rank_part_of_mesh(self) -> bool:
        return self._coordinate is not None

    def __getitem__(self, mesh_dim_names) -> DeviceMesh:
        """The sub-mesh of the named dimensions through this rank (``mesh["tp"]``)."""
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        if names == self._mesh_dim_names:
            return self
        dims = []
        for n in names:
            if n not in self._mesh_dim_names:
                raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names "
                               f"are {self._mesh_dim_names}.")
            dims.append(self._mesh_dim_names.index(n))
        if dims != sorted(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Found mesh dim indices "
                           f"to slice: {dims}. Mesh dim indices should be in ascending order.")
        if self._coordinate is None:
            raise RuntimeError(f"rank {self._rank} is not part of the mesh")
        index = tuple(slice(None) if d in dims else self._coordinate[d]
                      for d in range(self.ndim))
        out = DeviceMesh(self.device_type, self._mesh[index], mesh_dim_names=names,
                         _groups=[self._groups[d] for d in dims])
        out._root = self._get_root_mesh()
        return out

    def _get_root_mesh(self) -> DeviceMesh:
        """The mesh this one was sliced from (itself when it was not)."""
        return self.__dict__.get("_root") or self

    @staticmethod
    def _concatenate(meshes) -> DeviceMesh:
        """The mesh of the dims of ``meshes`` (slices of one root mesh, in the root's order):
        FSDP2's data-parallel mesh with tensor parallelism's, ``(dp, tp)``."""
        meshes = list(meshes)
        root = meshes[0]._get_root_mesh()
        names: list = []
        for m in meshes:
            if m._get_root_mesh() is not root or not m._mesh_dim_names:
                raise RuntimeError(f"DeviceMesh._concatenate: the meshes must be named slices "
                                   f"of one root mesh (init_device_mesh(..., mesh_dim_names=) "
                                   f"then mesh['dp'], mesh['tp']), got {meshes}")
            names.extend(m._mesh_dim_names)
        return root[tuple(names)]

    def __enter__(self) -> DeviceMesh:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.pop()

    def __repr__(self) -> str:
        shape = (f"({', '.join(f'{k}={v}' for k, v in zip(self._mesh_dim_names, self.shape))})"
                 if self._mesh_dim_names else f"{self.shape}")
        return f"DeviceMesh({shape}, '{self.device_type}', mesh={self._mesh.tolist()})"

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, DeviceMesh)
                                 and self.device_type == other.device_type
                                 and self._mesh.shape == other._mesh.shape
                                 and bool((self._mesh == other._mesh).all())
                                 and self._mesh_dim_names == other._mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.device_type, self._mesh.tobytes(), self._mesh.shape,
                     self._mesh_dim_names))

    @staticmethod
    def from_group(group, device_type: str, mesh=None, *, mesh_dim_names=None) -> DeviceMesh:
        """A mesh over existing process group(s): one group gives a 1-d mesh of its ranks."""
        groups = list(group) if isinstance(group, (list, tuple)) else [group]
        if mesh is None:
            if len(groups) != 1:
                raise ValueError("Expects mesh to be specified if passing more than one group")
            mesh = _c10d.get_process_group_ranks(groups[0])
        return DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names, _groups=groups)


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None,
                     backend_override=None) -> DeviceMesh:
    """The world's ranks as ``arange(world_size).reshape(mesh_shape)``."""
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError("Each mesh_dim_name must be unique.",
                               f"Found repeated mesh_dim_name in mesh_dim_names "
                               f"{tuple(mesh_dim_names)}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length!",
                               f"Found len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    if ":" in device_type:
        raise RuntimeError("Device type with index is not supported but got "
                           f"{device_type}. If you maintained a 'torch.device' object, "
                           "it's recommended to pass in 'device.type'.")
    if not _c10d.is_initialized():
        _c10d.init_process_group()
    world = _c10d.get_world_size()
    if int(np.prod(mesh_shape)) != world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but "
                           f"found {int(np.prod(mesh_shape))} ranks!"
                           if int(np.prod(mesh_shape)) > world else
                           f"init_device_mesh: mesh_shape {mesh_shape} holds "
                           f"{int(np.prod(mesh_shape))} ranks, the world has {world}")
    return DeviceMesh(device_type, np.arange(world).reshape(mesh_shape),
                      mesh_dim_names=mesh_dim_names)
