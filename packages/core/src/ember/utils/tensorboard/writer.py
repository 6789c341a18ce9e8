"""``SummaryWriter`` and ``FileWriter`` (``torch.utils.tensorboard.writer``)."""

from __future__ import annotations

import os
import socket
import time
import warnings
from datetime import datetime

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _embedding, _graph, summary
from ._convert import figure_to_image, make_np

__all__ = ["FileWriter", "SummaryWriter"]

_DEFAULT_BINS = summary.default_bins()


class FileWriter:
    """Writes ``Event`` protobufs to one event file in ``log_dir``.

    The file is ``events.out.tfevents.<time>.<hostname>.<pid>.<n><filename_suffix>``; events
    are queued (at most ``max_queue`` waiting) and a background thread writes them as
    CRC-framed records, flushing the file every ``flush_secs`` seconds, on :meth:`flush` and
    on :meth:`close`. Most users want :class:`SummaryWriter`.
    """

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self) -> str:
        """The directory this writer writes into."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None,
                  walltime: float | None = None) -> None:
        """Queue ``event``, stamped with ``walltime`` (default: now) and ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Queue a ``Summary`` protobuf as an event at ``global_step``."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime: float | None = None) -> None:
        """Queue a ``(GraphDef, RunMetadata)`` pair: the graph, and the run metadata tagged
        ``step1`` (as PyTorch writes it)."""
        graph, stats = graph_profile
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=stats.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        """Write every queued event to disk now."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file; the writer cannot be used afterwards."""
        self.event_writer.close()


class SummaryWriter:
    """Writes TensorBoard event files: ``SummaryWriter(log_dir=None, comment="",
    purge_step=None, max_queue=10, flush_secs=120, filename_suffix="")``.

    Args:
        log_dir: the directory to write into; by default
            ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>`` (e.g. ``runs/May04_22-14-54_host``).
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: when a crashed run is resumed at this step, TensorBoard drops the events
            the earlier files hold at this step or later.
        max_queue: how many events may wait in the queue before a write blocks.
        flush_secs: how often, in seconds, the queued events are flushed to disk.
        filename_suffix: appended to every event file name in the log dir.

    Events are written by a background thread; :meth:`flush` and :meth:`close` (or leaving a
    ``with SummaryWriter() as w:`` block) write everything out. Example::

        writer = SummaryWriter(comment="LR_0.1_BATCH_16")
        for n_iter in range(100):
            writer.add_scalar("Loss/train", loss, n_iter)
        writer.close()
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict | None = None
        self.default_bins = _DEFAULT_BINS
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The main file writer, (re)opened after :meth:`close`."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory event files are written into."""
        return self.log_dir

    # -- scalars -------------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a float, or a one-element tensor or array) under ``tag``.

        ``new_style`` writes it as a scalars-plugin tensor (faster for TensorBoard to load),
        in float64 with ``double_precision``; the default is the classic float32
        ``simple_value``. Example: ``writer.add_scalar("Loss/train", loss.item(), step)``.
        """
        self._get_file_writer().add_summary(
            summary.scalar(tag, scalar_value, new_style=new_style,
                           double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers as curves of one chart: each ``tag -> value`` goes to its own
        writer in the sub-directory ``<log_dir>/<main_tag>_<tag>`` (``/`` in ``main_tag``
        becomes ``_``), under the tag ``main_tag``, as PyTorch lays them out."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            sub_dir = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(sub_dir)
            if writer is None:
                writer = FileWriter(sub_dir, self.max_queue, self.flush_secs,
                                    self.filename_suffix)
                self.all_writers[sub_dir] = writer
            writer.add_summary(summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag: str, tensor, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log a whole tensor (the TensorBoard "tensor" plugin's ``TensorProto``)."""
        self._get_file_writer().add_summary(summary.tensor_proto(tag, tensor), global_step,
                                            walltime)

    # -- histograms ----------------------------------------------------------------------------
    def add_histogram(self, tag: str, values, global_step: int | None = None,
                      bins="tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Log a histogram of ``values`` (a tensor or array of any shape).

        ``bins`` is ``"tensorflow"`` (TensorFlow's exponential buckets, the default), or what
        ``numpy.histogram`` takes: a method name (``"auto"``, ``"fd"``, ``"doane"``,
        ``"scott"``, ``"stone"``, ``"rice"``, ``"sturges"``, ``"sqrt"``), a count or the
        edges. ``max_bins`` merges neighbouring buckets to keep the count down.
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(
            summary.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min, max, num, sum, sum_squares,
                          bucket_limits, bucket_counts, global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Log a histogram given its statistics: ``min``, ``max``, ``num`` values, their
        ``sum`` and ``sum_squares``, and the buckets' right edges ``bucket_limits`` with their
        ``bucket_counts`` (same length; the first bucket is usually an empty one on the
        left)."""
        self._get_file_writer().add_summary(
            summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                  bucket_counts), global_step, walltime)

    # -- images --------------------------------------------------------------------------------
    def add_image(self, tag: str, img_tensor, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log one image, PNG-encoded.

        ``img_tensor`` is laid out as ``dataformats`` says: ``"CHW"`` (default), ``"HWC"``,
        ``"HW"`` or another order of those letters; 1 channel is grey, 3 RGB, 4 RGBA. uint8
        values are pixels (0-255); float values are taken to be in [0, 1] and scaled by 255.
        """
        self._get_file_writer().add_summary(
            summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images (``"NCHW"`` by default, or ``"NHWC"``...), tiled 8 to a
        row into one PNG image. Values as in :meth:`add_image`."""
        self._get_file_writer().add_summary(
            summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """Log a matplotlib figure (or a list of figures, tiled) as an image; ``close``
        closes the figure once drawn. Needs ``matplotlib``."""
        if isinstance(figure, list):
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="NCHW")
        else:
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="CHW")

    def add_audio(self, tag: str, snd_tensor, global_step: int | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> None:
        """Log a mono sound clip: a 1-D tensor of samples in [-1, 1] (clipped), as WAV."""
        self._get_file_writer().add_summary(
            summary.audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    # -- text and hyperparameters ----------------------------------------------------------------
    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (TensorBoard renders it as Markdown) under ``<tag>/text_summary``."""
        self._get_file_writer().add_summary(summary.text(tag, text_string), global_step,
                                            walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict,
                    hparam_domain_discrete: dict | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Log a run's hyperparameters and final metrics for TensorBoard's HPARAMS tab.

        As PyTorch does, they go to a sub-run ``<log_dir>/<run_name>`` (``run_name`` defaults
        to the current time): the hparams plugin's experiment, session-start and session-end
        summaries, and each metric as a scalar there. Values are int, float, str, bool or a
        one-element tensor; ``hparam_domain_discrete`` lists each hyperparameter's possible
        values (``{"optimizer": ["adam", "sgd"]}``).
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, start, end = summary.hparams(hparam_dict, metric_dict,
                                                 hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as sub:
            sub.file_writer.add_summary(experiment, global_step)
            sub.file_writer.add_summary(start, global_step)
            sub.file_writer.add_summary(end, global_step)
            for k, v in metric_dict.items():
                sub.add_scalar(k, v, global_step)

    # -- graph -----------------------------------------------------------------------------------
    def add_graph(self, model, input_to_model=None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log a model's graph for TensorBoard's GRAPHS tab.

        ``model`` is an :class:`ember.export.ExportedProgram`, drawn as captured, or a
        module or function, captured here by ``ember.export.export(model, input_to_model)``
        in eval mode (``input_to_model`` a tensor or a tuple of arguments). Each op is a node
        carrying its output shapes; submodules fold into boxes named
        ``ClassName[attribute]``. ``verbose`` prints the captured graph;
        ``use_strict_trace`` is accepted for PyTorch's sake.
        """
        self._get_file_writer().add_graph(_graph.graph(model, input_to_model, verbose))

    # -- embeddings ------------------------------------------------------------------------------
    @staticmethod
    def _encode(rawstr: str) -> str:
        """A tag made safe as one path component (``%``, ``/`` and ``\\`` percent-encoded)."""
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat, metadata: list | None = None, label_img=None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: list | None = None) -> None:
        """Log an embedding for TensorBoard's PROJECTOR tab.

        ``mat`` is ``N x D`` (one point per row); ``metadata`` has one label per point (or,
        with ``metadata_header``, one row of columns per point); ``label_img`` is ``N x C x H
        x W``, one thumbnail per point. The files go to ``<log_dir>/<global_step:05>/<tag>/``
        (``tensors.tsv``, ``metadata.tsv``, ``sprite.png``) and ``projector_config.pbtxt``
        in the log dir lists every embedding logged by this writer.
        """
        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        logdir = self._get_file_writer().get_logdir()
        save_path = os.path.join(logdir, subdir)
        if mat.ndim != 2:
            raise ValueError(f"mat should be 2D, where mat.size(0) is the number of data "
                             f"points, got shape {tuple(mat.shape)}")
        if metadata is not None and mat.shape[0] != len(metadata):
            raise ValueError(f"#labels should equal with #data points ({len(metadata)} labels "
                             f"for {mat.shape[0]} points)")
        images = None
        if label_img is not None:
            images = make_np(label_img)
            if images.ndim != 4 or images.shape[0] != mat.shape[0]:
                raise ValueError(f"#images should equal with #data points: label_img must be "
                                 f"N x C x H x W with N = {mat.shape[0]}, got shape "
                                 f"{tuple(images.shape)}")
        if tf.io.gfile.exists(save_path):
            if not tf.io.gfile.isdir(save_path):
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot "
                                         "proceed.")
            warnings.warn("Embedding dir exists, did you set global_step for add_embedding()?",
                          stacklevel=2)
        else:
            tf.io.gfile.makedirs(save_path)
        if metadata is not None:
            _embedding.make_tsv(metadata, save_path, metadata_header=metadata_header)
        if images is not None:
            _embedding.make_sprite(images, save_path)
        _embedding.make_mat(mat, save_path)
        if not hasattr(self, "_projector_config"):
            from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend(
            [_embedding.get_embedding_info(metadata, images, subdir, global_step, tag)])
        from google.protobuf import text_format

        _embedding.write_pbtxt(logdir, text_format.MessageToString(self._projector_config))

    # -- PR curves -------------------------------------------------------------------------------
    def add_pr_curve(self, tag: str, labels, predictions, global_step: int | None = None,
                     num_thresholds: int = 127, weights=None,
                     walltime: float | None = None) -> None:
        """Log a precision-recall curve of binary ``labels`` (0/1 or bool) against
        ``predictions`` (probabilities in [0, 1], same shape), at ``num_thresholds``
        thresholds (at most 127); ``weights`` weighs each example."""
        self._get_file_writer().add_summary(
            summary.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step,
            walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step: int | None = None, num_thresholds: int = 127,
                         weights=None, walltime: float | None = None) -> None:
        """Log a precision-recall curve from precomputed counts and ratios, one value per
        threshold in each of the six arguments."""
        self._get_file_writer().add_summary(
            summary.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                 true_negative_counts, false_negative_counts, precision,
                                 recall, num_thresholds, weights), global_step, walltime)

    # -- custom scalars --------------------------------------------------------------------------
    def add_custom_scalars(self, layout: dict) -> None:
        """Lay out charts in TensorBoard's CUSTOM SCALARS tab::

            {"Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
             "USA": {"nasdaq": ["Margin", ["nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc"]]}}

        (category -> chart title -> ``["Multiline", tags]`` or ``["Margin", [value, lower,
        upper]]``; tags may be regular expressions).
        """
        self._get_file_writer().add_summary(summary.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list, category: str = "default",
                                          title: str = "untitled") -> None:
        """One multi-line chart of ``tags`` in the CUSTOM SCALARS tab."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list, category: str = "default",
                                       title: str = "untitled") -> None:
        """One margin chart (``tags`` = value, lower, upper) in the CUSTOM SCALARS tab."""
        if len(tags) != 3:
            raise ValueError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # -- lifetime --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every pending event of this writer (and its ``add_scalars`` sub-writers) to
        disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; a later ``add_*`` call opens a new file."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()
