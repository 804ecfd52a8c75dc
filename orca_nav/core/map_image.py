"""Map images as nav2_map_server reads them: PGM and PNG pixels to nav_msgs/OccupancyGrid values.

PGM is read and written here (a few lines of header parsing; no image library is a runtime
dependency); PNG maps are read with matplotlib, imported only when one is loaded.
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple, Union

import numpy as np

# Values of nav_msgs/OccupancyGrid data.
OCC_FREE = 0
OCC_OCCUPIED = 100
OCC_UNKNOWN = -1

PathLike = Union[str, Path]


def map_server_values(shade: np.ndarray, opaque: np.ndarray, mode: str, negate: bool,
                      occupied_thresh: float, free_thresh: float) -> np.ndarray:
    """nav2_map_server's pixel -> int8 rule. ``shade`` is brightness in [0, 1] (channel mean),
    ``opaque`` marks pixels with full alpha. Returns int8 values in image layout."""
    occ = shade if negate else 1.0 - shade
    if mode == 'raw':
        raw = np.round(shade * 255.0)
        return np.where((raw >= OCC_FREE) & (raw <= OCC_OCCUPIED), raw, OCC_UNKNOWN).astype(np.int8)
    out = np.full(shade.shape, OCC_UNKNOWN, dtype=np.int8)
    if mode == 'scale':
        span = max(occupied_thresh - free_thresh, 1e-12)
        scaled = np.rint((occ - free_thresh) / span * 100.0)
        middle = (occ >= free_thresh) & (occ <= occupied_thresh)
        out[middle] = scaled[middle].astype(np.int8)
    out[occ < free_thresh] = OCC_FREE
    out[occupied_thresh < occ] = OCC_OCCUPIED
    if mode == 'scale':
        out[~opaque] = OCC_UNKNOWN
    return out


def read_image_shade(path: Path) -> Tuple[np.ndarray, np.ndarray]:
    """Brightness in [0, 1] (mean of colour channels) and full-alpha mask of a PGM or PNG."""
    suffix = path.suffix.lower()
    if suffix in ('.pgm', '.pnm'):
        pixels, maxval = read_pgm(path)
        return pixels.astype(float) / maxval, np.ones(pixels.shape, dtype=bool)
    if suffix == '.png':
        import matplotlib.image  # lazy: only PNG maps need it

        img = np.asarray(matplotlib.image.imread(str(path)), dtype=float)  # PNG -> floats in [0, 1]
        if img.ndim == 2:
            return img, np.ones(img.shape, dtype=bool)
        if img.shape[2] in (2, 4):  # grey+alpha or RGBA
            return img[..., :-1].mean(axis=2), img[..., -1] >= 1.0
        return img.mean(axis=2), np.ones(img.shape[:2], dtype=bool)
    raise ValueError(f'image {path} must be a .pgm or .png file')


def _pgm_tokens(raw: bytes, count: int) -> Tuple[list, int]:
    """First ``count`` whitespace-separated header tokens (skipping # comments) and the offset
    just after the last one."""
    tokens = []
    pos = 0
    while len(tokens) < count:
        while pos < len(raw) and raw[pos:pos + 1].isspace():
            pos += 1
        if pos >= len(raw):
            raise ValueError('PGM header is truncated')
        if raw[pos:pos + 1] == b'#':
            while pos < len(raw) and raw[pos:pos + 1] not in (b'\n', b'\r'):
                pos += 1
            continue
        end = pos
        while end < len(raw) and not raw[end:end + 1].isspace() and raw[end:end + 1] != b'#':
            end += 1
        tokens.append(raw[pos:end])
        pos = end
    return tokens, pos


def read_pgm(path: PathLike) -> Tuple[np.ndarray, int]:
    """Read a binary (P5) or ASCII (P2) PGM. Returns (pixels ``[row, col]``, row 0 = top;
    maxval)."""
    raw = Path(path).read_bytes()
    magic = raw[:2]
    if magic not in (b'P5', b'P2'):
        raise ValueError(f'{path}: not a PGM file (magic {magic!r}, expected P5 or P2)')
    (width, height, maxval), pos = _pgm_tokens(raw[2:], 3)
    width, height, maxval = int(width), int(height), int(maxval)
    if width <= 0 or height <= 0 or not 0 < maxval < 65536:
        raise ValueError(f'{path}: bad PGM header {width}x{height} maxval {maxval}')
    body_start = 2 + pos
    if magic == b'P5':
        body_start += 1  # exactly one whitespace byte after maxval
        dtype = np.dtype('>u2') if maxval > 255 else np.dtype(np.uint8)
        count = width * height
        pixels = np.frombuffer(raw, dtype=dtype, count=count, offset=body_start)
    else:
        pixels = np.array(raw[body_start:].split()[:width * height], dtype=np.int64)
        if pixels.size != width * height:
            raise ValueError(f'{path}: PGM has {pixels.size} values, expected {width * height}')
    return pixels.reshape(height, width).astype(np.uint16 if maxval > 255 else np.uint8), maxval


def write_pgm(path: PathLike, pixels: np.ndarray) -> None:
    """Write an 8-bit binary (P5) PGM; ``pixels[row, col]`` with row 0 = top."""
    img = np.asarray(pixels)
    if img.ndim != 2 or img.dtype != np.uint8:
        raise ValueError(f'pixels must be a 2-D uint8 array, got {img.dtype} {img.shape}')
    header = f'P5\n{img.shape[1]} {img.shape[0]}\n255\n'.encode('ascii')
    Path(path).write_bytes(header + np.ascontiguousarray(img).tobytes())
