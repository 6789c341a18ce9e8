"""ember.vision.io (Pillow-backed image codecs) and ember.vision.utils (grids and drawing)."""

import io as pyio
import warnings

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import io, utils


def rgb_image(h=12, w=10, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (3, h, w), dtype=np.uint8)


def test_png_round_trip_is_exact_for_every_channel_count(tmp_path):
    for c in (1, 2, 3, 4):
        arr = np.random.default_rng(c).integers(0, 256, (c, 7, 9), dtype=np.uint8)
        data = io.encode_png(ember.from_numpy(arr), compression_level=9)
        assert data.dtype == ember.uint8 and data.dim() == 1
        assert bytes(data.numpy()[:8]) == b"\x89PNG\r\n\x1a\n"
        back = io.decode_png(data)
        assert back.dtype == ember.uint8 and back.shape == (c, 7, 9)
        np.testing.assert_array_equal(back.numpy(), arr)
    path = tmp_path / "x.png"
    io.write_png(ember.from_numpy(rgb_image()), str(path))
    np.testing.assert_array_equal(io.read_image(str(path)).numpy(), rgb_image())
    np.testing.assert_array_equal(np.asarray(Image.open(path)).transpose(2, 0, 1), rgb_image())


def test_read_modes():
    arr = rgb_image()
    data = io.encode_png(ember.from_numpy(arr))
    gray = io.decode_image(data, io.ImageReadMode.GRAY)
    expected = np.asarray(Image.fromarray(arr.transpose(1, 2, 0)).convert("L"))
    np.testing.assert_array_equal(gray.numpy()[0], expected)
    assert io.decode_image(data, io.ImageReadMode.RGB_ALPHA).shape == (4, 12, 10)
    assert (io.decode_image(data, "RGBA").numpy()[3] == 255).all()
    assert io.decode_image(data, io.ImageReadMode.GRAY_ALPHA).shape == (2, 12, 10)
    assert io.ImageReadMode.RGBA is io.ImageReadMode.RGB_ALPHA
    # palette PNGs decode to RGB like libpng's expansion
    buf = pyio.BytesIO()
    Image.fromarray(arr.transpose(1, 2, 0)).convert("P").save(buf, format="PNG")
    assert io.decode_image(
        ember.from_numpy(np.frombuffer(buf.getvalue(), np.uint8).copy())
    ).shape == (3, 12, 10)


def test_jpeg_encode_decode_and_quality(tmp_path):
    y, x = np.mgrid[0:32, 0:32]
    smooth = np.stack([y * 8, x * 8, (x + y) * 4]).astype(np.uint8)
    t = ember.from_numpy(smooth)
    hi, lo = io.encode_jpeg(t, quality=95), io.encode_jpeg(t, quality=10)
    assert bytes(hi.numpy()[:2]) == b"\xff\xd8" and lo.numel() < hi.numel()
    back = io.decode_jpeg(hi)
    assert back.shape == (3, 32, 32) and back.dtype == ember.uint8
    assert np.abs(back.numpy().astype(int) - smooth).mean() < 2
    assert io.decode_jpeg(hi, mode=io.ImageReadMode.GRAY).shape == (1, 32, 32)
    assert [b.shape for b in io.decode_jpeg([hi, lo])] == [(3, 32, 32)] * 2
    path = tmp_path / "x.jpg"
    io.write_jpeg(t, str(path), quality=90)
    assert io.read_image(str(path)).shape == (3, 32, 32)
    with pytest.raises(
        ValueError, match="Image quality should be a positive number between 1 and 100"
    ):
        io.encode_jpeg(t, quality=0)
    with pytest.raises(RuntimeError):
        io.decode_jpeg(io.encode_png(t))


def _encoded(frames, fmt, **kw):
    b = pyio.BytesIO()
    frames[0].save(b, format=fmt, save_all=len(frames) > 1, append_images=frames[1:], **kw)
    return ember.from_numpy(np.frombuffer(b.getvalue(), np.uint8).copy())


def test_decode_gif_frames_and_decode_image():
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 255, (12, 9, 3), dtype=np.uint8) for _ in range(3)]
    frames = [Image.fromarray(a).quantize(256) for a in arrays]
    one, three = _encoded(frames[:1], "GIF"), _encoded(frames, "GIF", duration=40, loop=0)
    single = io.decode_gif(one)
    assert single.shape == (3, 12, 9) and single.dtype == ember.uint8
    np.testing.assert_array_equal(single.numpy(),
                                  np.asarray(frames[0].convert("RGB")).transpose(2, 0, 1))
    animation = io.decode_gif(three)
    assert animation.shape == (3, 3, 12, 9)
    for k in range(3):
        np.testing.assert_array_equal(animation[k].numpy(),
                                      np.asarray(frames[k].convert("RGB")).transpose(2, 0, 1))
    # decode_image gives a GIF's every frame, in RGB whatever the mode (as torchvision)
    assert io.decode_image(three, io.ImageReadMode.GRAY).shape == (3, 3, 12, 9)
    with pytest.raises(RuntimeError, match="Unsupported GIF format or corrupted data"):
        io.decode_gif(one[:20])


def test_decode_webp_and_avif_modes():
    rng = np.random.default_rng(1)
    rgba = Image.fromarray(rng.integers(0, 255, (10, 14, 4), dtype=np.uint8))
    data = _encoded([rgba], "WEBP", lossless=True)
    out = io.decode_webp(data)
    assert out.shape == (4, 10, 14)
    np.testing.assert_array_equal(out.numpy(), np.asarray(rgba).transpose(2, 0, 1))
    assert io.decode_webp(data, "RGB").shape == (3, 10, 14)
    with pytest.warns(UserWarning, match="Webp does not support grayscale conversions"):
        assert io.decode_webp(data, io.ImageReadMode.GRAY).shape == (4, 10, 14)
    np.testing.assert_array_equal(io.decode_image(data).numpy(), out.numpy())
    with pytest.raises(RuntimeError, match="Unsupported WEBP format"):
        io.decode_webp(_encoded([rgba], "PNG"))
    from PIL import features

    if features.check("avif"):
        rgb = Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8))
        avif = io.decode_avif(_encoded([rgb], "AVIF", quality=100))
        assert avif.shape == (3, 16, 16) and avif.dtype == ember.uint8
        expected = np.asarray(Image.open(pyio.BytesIO(_encoded([rgb], "AVIF", quality=100)
                                                      .numpy().tobytes())).convert("RGB"))
        np.testing.assert_array_equal(avif.numpy(), expected.transpose(2, 0, 1))


def test_decode_heic_needs_pillow_heif():
    pytest.importorskip("PIL")
    try:
        import pillow_heif  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="pip install pillow-heif"):
            io.decode_heic(ember.zeros(10, dtype=ember.uint8))
    else:
        with pytest.raises(RuntimeError, match="Unsupported HEIF format"):
            io.decode_heic(ember.zeros(10, dtype=ember.uint8))


def test_read_write_file(tmp_path):
    path = tmp_path / "raw.bin"
    data = ember.tensor([1, 2, 255], dtype=ember.uint8)
    io.write_file(str(path), data)
    assert path.read_bytes() == b"\x01\x02\xff"
    back = io.read_file(str(path))
    assert back.dtype == ember.uint8 and back.tolist() == [1, 2, 255]


def np_grid(batch, nrow, padding, pad_value):
    b, c, h, w = batch.shape
    xmaps = min(nrow, b)
    ymaps = -(-b // xmaps)
    grid = np.full(
        (c, ymaps * (h + padding) + padding, xmaps * (w + padding) + padding),
        pad_value,
        batch.dtype,
    )
    for k in range(b):
        y, x = divmod(k, xmaps)
        grid[
            :,
            y * (h + padding) + padding : y * (h + padding) + padding + h,
            x * (w + padding) + padding : x * (w + padding) + padding + w,
        ] = batch[k]
    return grid


@pytest.mark.parametrize("b,nrow,padding", [(5, 3, 2), (8, 8, 0), (7, 2, 1)])
def test_make_grid_layout(b, nrow, padding):
    batch = np.random.default_rng(b).random((b, 3, 4, 5)).astype(np.float32)
    grid = utils.make_grid(ember.from_numpy(batch), nrow=nrow, padding=padding, pad_value=0.5)
    np.testing.assert_array_equal(grid.numpy(), np_grid(batch, nrow, padding, 0.5))


def test_make_grid_normalize_gray_and_list():
    batch = np.random.default_rng(0).standard_normal((3, 1, 4, 4)).astype(np.float32)
    g = utils.make_grid(ember.from_numpy(batch), normalize=True, padding=0, nrow=3).numpy()
    assert g.shape == (3, 4, 12) and g.min() == 0 and g.max() == 1
    each = utils.make_grid(
        [ember.from_numpy(b) for b in batch], normalize=True, scale_each=True, padding=0
    ).numpy()
    for k in range(3):
        tile = each[0, :, 4 * k : 4 * k + 4]
        assert tile.min() == 0 and tile.max() == 1
    ranged = utils.make_grid(
        ember.from_numpy(batch), normalize=True, value_range=(-1, 1), padding=0
    ).numpy()
    np.testing.assert_allclose(ranged[0, :, :4], (np.clip(batch[0, 0], -1, 1) + 1) / 2, rtol=1e-6)
    single = utils.make_grid(ember.ones(1, 4, 4))
    assert single.shape == (3, 4, 4)
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid([np.zeros((3, 2, 2))])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(ember.ones(2, 3, 2, 2), normalize=True, value_range=[0, 1])


def test_save_image(tmp_path):
    batch = np.random.default_rng(0).random((4, 3, 5, 5)).astype(np.float32)
    path = tmp_path / "grid.png"
    utils.save_image(ember.from_numpy(batch), str(path), nrow=2)
    saved = np.asarray(Image.open(path))
    expected = (
        np.clip(np_grid(batch, 2, 2, 0.0) * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    )
    np.testing.assert_array_equal(saved, expected)


def test_draw_bounding_boxes():
    img = ember.zeros(3, 20, 30, dtype=ember.uint8)
    boxes = ember.tensor([[2, 3, 10, 12], [15, 1, 28, 18]], dtype=ember.float32)
    out = utils.draw_bounding_boxes(img, boxes, colors=["red", (0, 255, 0)], width=1)
    assert out.dtype == ember.uint8 and out.shape == (3, 20, 30)
    o = out.numpy()
    assert tuple(o[:, 3, 5]) == (255, 0, 0) and tuple(o[:, 7, 2]) == (255, 0, 0)  # edges of box 0
    assert tuple(o[:, 7, 6]) == (0, 0, 0)  # inside, not filled
    assert tuple(o[:, 1, 20]) == (0, 255, 0)
    filled = utils.draw_bounding_boxes(img, boxes, colors="blue", fill=True).numpy()
    assert filled[2, 7, 6] == round(255 * 100 / 255) and filled[0, 7, 6] == 0
    labelled = utils.draw_bounding_boxes(img, boxes, labels=["cat", "dog"], colors="white").numpy()
    assert labelled[:, 4:12, 4:10].sum() > 0  # text drawn inside box 0
    gray = utils.draw_bounding_boxes(ember.zeros(1, 20, 30, dtype=ember.uint8), boxes)
    assert gray.shape == (3, 20, 30)
    as_float = utils.draw_bounding_boxes(ember.zeros(3, 20, 30), boxes, colors="red")
    assert as_float.dtype == ember.float32 and as_float.numpy()[0, 3, 5] == 1.0
    with pytest.raises(ValueError, match="Boxes need to be in \\(xmin, ymin, xmax, ymax\\) format"):
        utils.draw_bounding_boxes(img, ember.tensor([[5.0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="Number of boxes \\(2\\) and labels \\(1\\) mismatch"):
        utils.draw_bounding_boxes(img, boxes, labels=["a"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert utils.draw_bounding_boxes(img, ember.zeros(0, 4)) is img
    assert "No box was drawn" in str(w[0].message)


def test_draw_segmentation_masks():
    img = ember.from_numpy(np.full((3, 4, 4), 100, dtype=np.uint8))
    masks = np.zeros((2, 4, 4), dtype=bool)
    masks[0, :2] = True
    masks[1, 1:3] = True
    out = utils.draw_segmentation_masks(
        img, ember.from_numpy(masks), alpha=0.5, colors=["red", (0, 0, 200)]
    ).numpy()
    assert tuple(out[:, 0, 0]) == (177, 50, 50)  # red only: 100*.5 + 255*.5 truncated
    assert tuple(out[:, 1, 0]) == (50, 50, 50)  # overlap: black
    assert tuple(out[:, 2, 0]) == (50, 50, 150)  # blue only
    assert tuple(out[:, 3, 0]) == (100, 100, 100)
    fl = utils.draw_segmentation_masks(
        ember.full((3, 4, 4), 0.5), ember.from_numpy(masks[0]), alpha=1.0, colors="white"
    )
    assert fl.dtype == ember.float32 and fl.numpy()[0, 0, 0] == 1.0 and fl.numpy()[0, 3, 0] == 0.5
    with pytest.raises(ValueError, match="The masks must be of dtype bool"):
        utils.draw_segmentation_masks(img, ember.zeros(4, 4))
    with pytest.raises(ValueError, match="Pass an RGB image"):
        utils.draw_segmentation_masks(
            ember.zeros(1, 4, 4, dtype=ember.uint8), ember.from_numpy(masks)
        )
    with pytest.raises(ValueError, match="Number of colors must be equal or larger"):
        utils.draw_segmentation_masks(img, ember.from_numpy(masks), colors=["red"])


def test_draw_bounding_boxes_filled_labels():
    img = ember.zeros(3, 30, 40, dtype=ember.uint8)
    boxes = ember.tensor([[1, 1, 38, 28]])
    out = utils.draw_bounding_boxes(
        img, boxes, labels=["hi"], colors="red", fill_labels=True, label_background_colors="yellow"
    ).numpy()
    pixels = {tuple(out[:, y, x]) for y in range(3, 14) for x in range(3, 14)}
    assert (255, 255, 0) in pixels and (0, 0, 0) in pixels  # yellow box, black text


def test_draw_oriented_boxes():
    img = ember.zeros(3, 40, 50, dtype=ember.uint8)
    boxes = ember.tensor([[5.0, 5, 30, 8, 27, 30, 2, 27]])
    out = utils.draw_bounding_boxes(img, boxes, colors="white", fill=True).numpy()
    assert out[0, 17, 15] == 100  # inside: the fill blended at alpha 100
    assert out[0, 17, 3] == 255  # the solid left edge
    assert out[0, 5, 7] == 255 and out[0, 6, 11] == 100  # the dashed first edge: a dash, a gap


def keypoint_image(dtype=ember.uint8):
    img = ember.zeros(3, 20, 24, dtype=dtype)
    kps = ember.tensor(
        [[[2.0, 3.0], [10.0, 12.0], [20.0, 5.0]], [[5.0, 15.0], [15.0, 15.0], [1.0, 1.0]]]
    )
    return img, kps


def test_draw_keypoints_pixels():
    from PIL import Image, ImageDraw

    img, kps = keypoint_image()
    vis = ember.tensor([[True, True, False], [True, True, True]])
    out = utils.draw_keypoints(img, kps, [(0, 1), (1, 2)], "red", 1, 2, vis)
    assert out.dtype == ember.uint8 and out.shape == (3, 20, 24)
    canvas = Image.new("RGB", (24, 20))
    draw = ImageDraw.Draw(canvas)
    for inst, v in zip(kps.to(ember.int64).tolist(), vis.tolist()):
        for (x, y), shown in zip(inst, v):
            if shown:
                draw.ellipse([x - 1, y - 1, x + 1, y + 1], fill="red", width=0)
        for a, b in [(0, 1), (1, 2)]:
            if v[a] and v[b]:
                draw.line((tuple(inst[a]), tuple(inst[b])), width=2)
    np.testing.assert_array_equal(out.numpy(), np.asarray(canvas).transpose(2, 0, 1))
    assert out.numpy()[0, 5, 20] == 0  # the invisible keypoint is not drawn
    assert out.numpy()[0, 3, 2] == 255


def test_draw_keypoints_float_and_visibility_forms():
    img, kps = keypoint_image()
    u8 = utils.draw_keypoints(img, kps, colors=(10, 200, 30))
    f = utils.draw_keypoints(img.float(), kps, colors=(10, 200, 30))
    assert f.dtype == ember.float32
    np.testing.assert_allclose(f.numpy(), u8.numpy() / 255, atol=1e-7)
    vis = ember.tensor([[1, 0, 1], [1, 1, 0]])
    a = utils.draw_keypoints(img, kps, visibility=vis)
    b = utils.draw_keypoints(img, kps, visibility=vis[..., None])
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_draw_keypoints_errors():
    img, kps = keypoint_image()
    with pytest.raises(TypeError, match="The image must be a tensor"):
        utils.draw_keypoints(img.numpy(), kps)
    with pytest.raises(ValueError, match="The image dtype must be uint8 or float, got"):
        utils.draw_keypoints(img.int(), kps)
    with pytest.raises(ValueError, match="Pass individual images, not batches"):
        utils.draw_keypoints(img[None], kps)
    with pytest.raises(ValueError, match="Pass an RGB image"):
        utils.draw_keypoints(img[:1], kps)
    with pytest.raises(ValueError, match="keypoints must be of shape"):
        utils.draw_keypoints(img, kps[0])
    with pytest.raises(ValueError, match="visibility must be of shape \\(num_instances, K\\)"):
        utils.draw_keypoints(img, kps, visibility=ember.ones(6, dtype=ember.bool))
    with pytest.raises(ValueError, match="must have the same dimensionality"):
        utils.draw_keypoints(img, kps, visibility=ember.ones(2, 2, dtype=ember.bool))
