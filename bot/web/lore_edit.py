"""Editing the lore in the browser: the lore folder's files in text areas, a preview with the diff of
the entries added, removed and changed against the loaded lore, then, confirmed, the files written
back into the folder and loaded — the operation of ``python -m memory.admin lore load DIR``, audited
under the moderator's name.

The folder stays the source of truth (the first start, ``lore load`` and the planner's canon names
read it), so an edit made here survives a reload from the files. Only the folder's existing files can
be edited (a field naming another path is refused); each is written atomically (a temporary file in
the folder, then renamed), and only after every file parsed and the lore still has entries.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

from starlette import responses
from starlette.exceptions import HTTPException

from memory import errors, identity
from memory.ops import admin_memory
from memory.spaces import lore

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.datastructures import FormData
    from starlette.requests import Request

    from bot.web import site as site_module

#: a form field holding a lore file's text is named ``file:<relative path>``
FIELD = "file:"


def edited(form: FormData, directory: Path) -> tuple[dict[str, str], list[str]]:
    """The folder's files with the form's texts in place of theirs, and the names changed."""
    current = lore.files(directory)
    texts = dict(current)
    for key, value in form.multi_items():
        if not key.startswith(FIELD):
            continue
        name = key.removeprefix(FIELD)
        if name not in current:
            raise HTTPException(400, f"{name!r} is not a file of the lore folder")
        texts[name] = str(value).replace("\r\n", "\n")
    return texts, [name for name in texts if texts[name] != current[name]]


def parse(texts: dict[str, str]) -> list[lore.Entry]:
    entries = lore.parse_files(texts)
    if not entries:
        raise errors.ConfigurationError("no lore entry would be left (.md sections or .yaml)")
    return entries


def write(directory: Path, texts: dict[str, str], names: list[str]) -> None:
    for name in names:
        target = directory / name
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(texts[name])
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise


def _refused(
    site: site_module.Site,
    request: Request,
    texts: dict[str, str],
    changed: list[str],
    exc: errors.ConfigurationError,
) -> responses.Response:
    """The files again, with why they do not parse (400): nothing written."""
    context = {"files": texts, "error": str(exc), "changed": changed, "diff": None}
    return site.render(request, "lore_preview.html", status_code=400, **context)


async def preview(request: Request) -> responses.Response:
    """POST: the diff the edited files would make, with the files to edit again or confirm."""
    site: site_module.Site = request.app.state.site
    form = await site.checked_form(request)
    directory = site.services.settings.lore_dir
    texts, changed = edited(form, directory)
    current = await site.services.spaces.list(identity.LORE_KEY, limit=100_000)
    try:
        diff = admin_memory.lore_diff(current, parse(texts))
    except errors.ConfigurationError as exc:
        return _refused(site, request, texts, changed, exc)
    return site.render(
        request,
        "lore_preview.html",
        files=texts,
        error=None,
        changed=changed,
        diff=diff,
        changes=len(diff["added"]) + len(diff["removed"]) + len(diff["changed"]),
    )


async def replace(request: Request) -> responses.Response:
    """POST (the preview's confirmation): write the edited files, then load the folder."""
    site: site_module.Site = request.app.state.site
    form = await site.checked_form(request)
    directory = site.services.settings.lore_dir
    texts, changed = edited(form, directory)
    try:
        parse(texts)
    except errors.ConfigurationError as exc:
        return _refused(site, request, texts, changed, exc)
    try:
        write(directory, texts, changed)
    except OSError as exc:
        return site.render(
            request, "error.html", message=f"cannot write the lore folder: {exc}", status_code=500
        )
    count = await site.services.operations.load_lore(directory, actor=site.user(request).actor)
    return responses.RedirectResponse(f"/lore?loaded={count}", status_code=303)
