"""Where a dataset comes from (docs/design/datasets.md#sources): repository, licence, citation, the attribution line, and the
MIT text that must travel with copies of MIT data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """Where a dataset comes from (docs/design/datasets.md#sources)."""

    name: str
    repository: str
    licence: str
    licence_url: str
    citation: str
    raw_hint: str
    licence_notice: str | None = None

    @property
    def share_alike(self) -> bool:
        return "BY-SA" in self.licence

    def attribution(self) -> str:
        """The attribution line of meta.json: ``"<citation>. Data: https://<repository> (<licence>). Converted by ..."``."""
        return f"{self.citation}. Data: https://{self.repository} ({self.licence}). Converted by tutormetrics convert {self.name}."


_MIT = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated "
    "documentation files (the \"Software\"), to deal in the Software without restriction, including without limitation "
    "the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to "
    "permit persons to whom the Software is furnished to do so, subject to the following conditions:\n\nThe above "
    "copyright notice and this permission notice shall be included in all copies or substantial portions of the "
    "Software.\n\nTHE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT "
    "LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL "
    "THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF "
    "CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN "
    "THE SOFTWARE."
)


def mit_notice(copyright_line: str) -> str:
    """The MIT licence text with its copyright line (must travel with copies of MIT data)."""
    return f"MIT License\n\n{copyright_line}\n\n{_MIT}"
