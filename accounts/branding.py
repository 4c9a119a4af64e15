"""An account's report branding (accounts.ReportBranding): read it, check and save it, and the colour arithmetic
that keeps its accent readable. The one write path: the dashboard's "Report branding" screen and the admin call
report_branding_save.

A logo is PNG or JPEG only, recognised by its bytes (never by its name or declared type): an SVG is a document
that can carry script, so it is refused whatever it is called."""

import base64
import io
import re
import struct
from dataclasses import dataclass

from accounts.models import Account, ReportBranding
from audits.errors import AuditRefused, ErrorCode

LOGO_MAX_BYTES = 512 * 1024  # a logo is embedded in every report's HTML (and fingerprinted with it)
LOGO_MAX_SIDE_PX = 4000  # a logo larger than this on a side is refused (decompression bombs, pointless detail)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
HEX_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
DEFAULT_ACCENT = "#1f4e79"  # the report's own navy when an account has set nothing
DEFAULT_PREPARED_BY = "Sitewarden"
TEXT_CONTRAST_MIN = 4.5  # WCAG AA for body text
DARKEN_STEP = 0.9  # each step keeps this share of every channel until the accent reads on white


# --- colours -------------------------------------------------------------------------------------------------


def _channels(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _luminance(colour: str) -> float:
    """WCAG relative luminance of #rrggbb."""

    def linear(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _channels(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: str, second: str) -> float:
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable_text_on(background: str) -> str:
    """Black or white, whichever reads better on `background` (one of them always reaches 4.5:1)."""
    return "#000000" if contrast_ratio(background, "#000000") >= contrast_ratio(background, "#ffffff") else "#ffffff"


def accent_on_white(colour: str) -> str:
    """The accent as text on a white page: itself when it reads (4.5:1), else darkened until it does."""
    r, g, b = _channels(colour)
    current = colour
    while contrast_ratio(current, "#ffffff") < TEXT_CONTRAST_MIN:
        r, g, b = (int(c * DARKEN_STEP) for c in (r, g, b))
        current = f"#{r:02x}{g:02x}{b:02x}"
    return current


# --- the logo ------------------------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size from a JPEG's first start-of-frame marker; None when there is none (not a JPEG image)."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def logo_check(data: bytes) -> str:
    """The content type of a logo upload (image/png or image/jpeg), or AuditRefused(invalid_branding) saying why.
    Told apart by the file's own bytes and its image header, and checked whole by Pillow where it is installed
    (it is not a dependency of the product)."""

    def refuse(message: str):
        return AuditRefused(ErrorCode.INVALID_BRANDING, message, field="logo")

    if len(data) > LOGO_MAX_BYTES:
        raise refuse(f"The logo is {len(data) // 1024} KB; at most {LOGO_MAX_BYTES // 1024} KB.")
    if data.startswith(PNG_MAGIC):
        content_type, size = "image/png", _png_size(data)
    elif data.startswith(JPEG_MAGIC):
        content_type, size = "image/jpeg", _jpeg_size(data)
    else:
        raise refuse("The logo must be a PNG or JPEG image (SVG and other formats are not accepted).")
    if size is None or not all(size):
        raise refuse("The logo file is damaged: its image size cannot be read.")
    if max(size) > LOGO_MAX_SIDE_PX:
        raise refuse(f"The logo is {size[0]}×{size[1]} px; at most {LOGO_MAX_SIDE_PX} px on a side.")
    if not _pillow_accepts(data):
        raise refuse("The logo file is damaged: it cannot be read as an image.")
    return content_type


def _pillow_accepts(data: bytes) -> bool:
    """Pillow's own check of the whole file where Pillow is installed (it is not a dependency); True without it."""
    try:
        from PIL import Image  # why: optional; the header checks above stand alone
    except ImportError:
        return True
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    except Exception:  # Pillow raises many types for a bad file; any of them means "not an image we accept"
        return False
    return True


def colour_check(value: str) -> str:
    """#rrggbb in lower case, or AuditRefused(invalid_branding)."""
    value = (value or "").strip()
    if not HEX_COLOUR.match(value):
        raise AuditRefused(
            ErrorCode.INVALID_BRANDING, "The accent colour must be written #rrggbb, e.g. #1f4e79.", field="accent_color"
        )
    return value.lower()


# --- read and write ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Branding:
    """What a report shows of its account's branding, defaults filled in."""

    name: str
    contact: str
    accent: str  # #rrggbb as set
    accent_text: str  # black or white, to write on the accent
    accent_ink: str  # the accent darkened as needed to read as text on white
    logo_data_uri: str  # "" without a logo
    paper_size: str  # ReportBranding.PaperSize value
    is_set: bool  # the account has saved a branding


def branding_for_account(*, account_id) -> Branding:
    """Selector: the account's report branding, or the defaults (one query)."""
    row = ReportBranding.objects.filter(account_id=account_id).first()
    if row is None:
        return Branding(
            name=DEFAULT_PREPARED_BY,
            contact="",
            accent=DEFAULT_ACCENT,
            accent_text=readable_text_on(DEFAULT_ACCENT),
            accent_ink=accent_on_white(DEFAULT_ACCENT),
            logo_data_uri="",
            paper_size=ReportBranding.PaperSize.A4,
            is_set=False,
        )
    logo = bytes(row.logo or b"")
    uri = f"data:{row.logo_type};base64,{base64.b64encode(logo).decode()}" if logo and row.logo_type else ""
    return Branding(
        name=row.name or DEFAULT_PREPARED_BY,
        contact=row.contact,
        accent=row.accent_color,
        accent_text=readable_text_on(row.accent_color),
        accent_ink=accent_on_white(row.accent_color),
        logo_data_uri=uri,
        paper_size=row.paper_size,
        is_set=True,
    )


def report_branding_save(
    *,
    account: Account,
    name: str,
    contact: str,
    accent_color: str,
    paper_size: str,
    logo: bytes | None = None,
    remove_logo: bool = False,
) -> ReportBranding:
    """Create or change an account's report branding. `logo` None keeps the current one; `remove_logo` drops it.
    Every value is checked here (the form's checks are for showing errors beside their field)."""
    accent = colour_check(accent_color)
    if paper_size not in ReportBranding.PaperSize.values:
        raise AuditRefused(ErrorCode.INVALID_BRANDING, "The paper size must be A4 or Letter.", field="paper_size")
    fields = {
        "name": name.strip()[: ReportBranding._meta.get_field("name").max_length],
        "contact": contact.strip()[: ReportBranding._meta.get_field("contact").max_length],
        "accent_color": accent,
        "paper_size": paper_size,
    }
    if logo is not None:
        fields.update(logo=logo, logo_type=logo_check(logo))
    elif remove_logo:
        fields.update(logo=b"", logo_type="")
    row, _ = ReportBranding.objects.update_or_create(account=account, defaults=fields)
    return row
