"""Masking of secrets in everything the harness prints or writes.

A CI log or a results file that holds a key is a leaked key, and keys reach text by many roads: the API key
itself (servers echo it in 401 bodies), credentials in a URL (`http://user:sk-...@host/v1`, `?api_key=...`),
header values, and values the user put in `extra_body` under names such as `x_api_key` or `auth_token`.
One `Redactor` knows every secret of a run and masks them all, in text (`__call__`) and in JSON-like values
(`value`), so each writer applies the same rule instead of its own.

Two layers: the literal secrets the run knows (replaced wherever they appear, whatever surrounds them), and
patterns that need no knowledge (URL userinfo, secret-looking query parameters, `Bearer` tokens, and string
values under secret-looking keys), so a credential the run was never told about is still masked.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_SECRET_LEN = 6  # shorter literal values would mask ordinary words; the patterns still cover URLs

# names whose string values are secrets: *key*, *token*, *secret*, authorization, passwords, credentials
_SECRET_NAME = re.compile(r"key|token|secret|authori[sz]ation|passw(or)?d|credential|signature|^sig$|cookie",
                          re.IGNORECASE)
# names that contain those words but hold no secret (token counts, recording keys, tool choice ...)
_NOT_SECRET_NAME = re.compile(r"^(max_tokens|max_completion_tokens|max_output_tokens|\w*_tokens"
                              r"|\w*tokens_details|token_count|top_logprobs|metric_key)$", re.IGNORECASE)
# These run on model output too, so each is linear in the text (no nested or overlapping repeats): a
# hostile answer cannot make masking slow.
# scheme://user:password@  or  scheme://token@  (a raw @ inside a password is not valid in a URL)
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]{0,30}://)(?P<user>[^\s/?#@:\"'<>]*)"
                       r"(?::(?P<password>[^\s/?#@\"'<>]*))?@")
# ?api_key=... &token=... (also in fragments)
_QUERY = re.compile(r"(?P<head>[?&#;](?P<name>[^=&?;\s#\"'<>]{1,100})=)(?P<value>[^&\s#\"'<>]+)")
# where a credential may start: not inside a word, or right after a JSON escape (a results line is JSON text,
# and a key at the start of a line there follows "\\n")
_START = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtfb]))"
# "Bearer <credential>": 16+ characters with a digit, so prose ("Bearer of bad news") is left alone
_BEARER = re.compile(r"(?P<head>(?:\b|(?<=\\[nrtfb]))Bearer\s+)"
                     r"(?P<value>(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,})")
# "Basic <base64 of user:password>": 8+ base64 characters with a digit, + / or =, so prose ("Basic research")
# is left alone
_BASIC = re.compile(r"(?P<head>(?:\b|(?<=\\[nrtfb]))Basic\s+)(?P<value>(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})")
# the key shapes of the common providers, each with its fixed prefix and a length no word has; the cheap test
# (`_SHAPE_HINTS`) keeps text that holds none of the prefixes from running them at all; no lookahead scans a
# run, so a long run is consumed once, whatever it holds (a digit, where required, is checked in `_key_repl`)
_KEY_SHAPES = re.compile(_START + "(?:" + "|".join((
    r"sk-[A-Za-z0-9_-]{20,}",  # OpenAI sk-, sk-proj-, sk-svcacct-; Anthropic sk-ant-: a digit required
    r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b", r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub
    r"xox[abposre]-[A-Za-z0-9-]{10,}",  # Slack: a digit required
    r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",  # Google API key
    r"(?:AKIA|ASIA)[A-Z0-9]{16}\b",  # an AWS access key id
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JWT: header.payload.signature
)) + ")")
_SHAPE_HINTS = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "AIza", "AKIA", "ASIA", "eyJ")
# an AWS secret access key: 40 base64 characters, both cases and a digit (a git hash is lower-case hex), looked
# for only in text that holds an access key id or names the secret
_AWS_SECRET = re.compile(r"(?:(?<![A-Za-z0-9/+=])|(?<=\\[nrtfb]))(?=[A-Za-z0-9/+]{0,39}[A-Z])"
                         r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_HINT = re.compile(_START + r"(?:AKIA|ASIA)[A-Z0-9]{16}\b|secret_?access_?key", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a mapping key or query parameter name says its value is a secret."""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.match(name)


def mask_url(url: str) -> str:
    """`url` with its userinfo password (or a lone userinfo token) and secret-looking query values masked."""
    return mask_patterns(url)


def mask_patterns(text: str) -> str:
    """The pattern layer alone: URL userinfo, secret-looking query parameters, Bearer and Basic credentials,
    and the key shapes of the common providers (`mask_key_shapes`)."""
    if "@" in text and "://" in text:
        text = _USERINFO.sub(_userinfo_repl, text)
    if "=" in text:
        text = _QUERY.sub(_query_repl, text)
    if "Bearer" in text:
        text = _BEARER.sub(lambda m: m.group("head") + MASK, text)
    if "Basic" in text:
        text = _BASIC.sub(lambda m: m.group("head") + MASK, text)
    return mask_key_shapes(text)


def _key_repl(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.startswith(("sk-", "xox")) and not any(c.isdigit() for c in found):
        return found  # sk-another-key-entirely, xoxo-hugs-and-kisses: words, not keys
    return MASK


def mask_key_shapes(text: str) -> str:
    """Credential-shaped text masked: the key formats of OpenAI, Anthropic, GitHub, Slack, Google and AWS (an
    access key id, and a secret access key beside one), and JWTs. For text evals-cli did not write itself (model
    replies, tool and MCP results, traces): a key pasted there is masked though the run was never told it."""
    low = text.lower()  # _AWS_HINT (case-insensitive) needs one of these: most text skips the search
    # (and looks before the key ids are masked)
    aws = ("akia" in low or "asia" in low or "access" in low) and _AWS_HINT.search(text) is not None
    if any(hint in text for hint in _SHAPE_HINTS):
        text = _KEY_SHAPES.sub(_key_repl, text)
    if aws:  # after: a 40-character run inside a longer key is that key's, masked whole above
        text = _AWS_SECRET.sub(MASK, text)
    return text


def _userinfo_repl(match: re.Match[str]) -> str:
    user, password = match.group("user"), match.group("password")
    if password is None:  # http://sk-...@host: the lone userinfo is the credential
        return f"{match.group('scheme')}{MASK}@" if user else match.group(0)
    return f"{match.group('scheme')}{user}:{MASK}@"


def _query_repl(match: re.Match[str]) -> str:
    if match.group("value") == MASK or not is_secret_name(unquote(match.group("name"))):
        return match.group(0)
    return match.group("head") + MASK


def url_secrets(url: str | None) -> list[str]:
    """The credentials a URL carries: its userinfo password (or lone token) and secret-looking query values,
    raw and percent-decoded (either form may be echoed back), and every form the HTTP client sends of the
    userinfo: `user:password` and its base64, the `Authorization: Basic` credential a server may echo."""
    if not url:
        return []
    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is not None:
        netloc = parts.netloc
        if "@" in netloc:
            userinfo = netloc.rpartition("@")[0]
            user, colon, password = userinfo.partition(":")
            found += [password] if colon else [user]
            found += basic_forms(user, password)
        for piece in re.split(r"[&;]", f"{parts.query}&{parts.fragment}"):
            name, eq, value = piece.partition("=")
            if eq and value and is_secret_name(unquote(name)):
                found.append(value)
    return sorted({v for s in found if s for v in (s, unquote(s))})


def basic_forms(user: str, password: str) -> list[str]:
    """What HTTP Basic sends of a URL's userinfo: `user:password` (raw and percent-decoded) and its base64."""
    pairs = {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}
    forms = set(pairs)
    for pair in pairs:
        for encoding in ("utf-8", "latin-1"):
            try:
                forms.add(base64.b64encode(pair.encode(encoding)).decode("ascii"))
            except UnicodeEncodeError:
                continue
    return sorted(f for f in forms if f != ":")


def secret_values(value: Any, _under_secret: bool = False, _depth: int = 0) -> list[str]:
    """Every string held under a secret-looking key anywhere in a JSON-like value (extra_body, headers)."""
    if _depth > 50:
        return []
    if isinstance(value, str):
        return [value] if _under_secret and value else []
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += secret_values(item, _under_secret or is_secret_name(str(key)), _depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            found += secret_values(item, _under_secret, _depth + 1)
    return found


def header_secrets(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[str]:
    """The credential values of HTTP headers: Authorization (with and without its scheme word), api-key style
    headers, cookies."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: list[str] = []
    for name, value in items:
        if is_secret_name(str(name)) and value:
            found.append(str(value))
            scheme, _, rest = str(value).partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                found.append(rest.strip())
    return found


class Redactor:
    """Masks the secrets a run knows, and anything that looks like a credential, in text and JSON values.

    `add` teaches it more secrets as they are seen (the recording transport adds each request's header
    values). Calls are cheap when the text holds nothing: a substring test per secret, then the patterns."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str | None]) -> None:
        known = set(self.secrets)
        known.update(s for s in secrets if s and len(s) >= MIN_SECRET_LEN and s != MASK)
        self.secrets = sorted(known, key=len, reverse=True)  # longest first: a key inside a longer one

    def __call__(self, text: str) -> str:
        return mask_patterns(self.known(text)) if isinstance(text, str) and text else text

    def known(self, text: str) -> str:
        """The secrets the run knows masked, without the pattern layer: what a recording key is hashed from, so
        two requests that differ only in credential-looking text (a prompt quoting two different Bearer tokens)
        keep different keys while a run key stays out of them."""
        if not isinstance(text, str) or not text:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def has_secret_values(self, value: Any, _depth: int = 0) -> bool:
        """Whether a JSON-like value holds a string under a secret-looking key: a cheap walk over the keys
        alone (no copy), so the common request, which holds none, is masked as text only."""
        kind = type(value)
        if _depth > 200:
            return False
        if kind is dict:
            for key, item in value.items():
                item_kind = type(item)
                if item_kind is str:
                    if item and is_secret_name(str(key)):
                        return True
                elif (item_kind is dict or item_kind is list) and self.has_secret_values(item, _depth + 1):
                    return True
        elif kind is list:
            for item in value:
                if (type(item) is dict or type(item) is list) and self.has_secret_values(item, _depth + 1):
                    return True
        return False

    def value(self, value: Any, _depth: int = 0, *, patterns: bool = True) -> Any:
        """A copy of a JSON-like value with every string masked (`patterns`: the pattern layer too, see `known`),
        and strings under secret-looking keys replaced by the mask whole."""
        if isinstance(value, str):
            return self(value) if patterns else self.known(value)
        if _depth > 200:
            return value
        if isinstance(value, Mapping):
            return {k: (MASK if isinstance(v, str) and v and is_secret_name(str(k))
                        else self.value(v, _depth + 1, patterns=patterns)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, _depth + 1, patterns=patterns) for v in value]
        return value


def endpoint_secrets(api_key: str | None, base_url: str | None, extra: Any = None) -> list[str]:
    """What one endpoint configuration knows that is secret: the key, URL credentials, extra_body secrets."""
    found = [api_key] if api_key else []
    return [*found, *url_secrets(base_url), *secret_values(extra)]


def spec_secrets(spec: Any, _depth: int = 0) -> list[str]:
    """The secrets a suite (as a JSON-like dump) states anywhere: every `api_key`, the credentials of every
    `base_url` (and an http agent's `url`), and secret-looking values under every `extra_body` / `headers` / `env`
    (a command agent's, an MCP server's), however deep (target, judge block, graders, panel judges)."""
    found: list[str] = []
    if _depth > 50:
        return found
    if isinstance(spec, Mapping):
        for key, item in spec.items():
            if key == "api_key" and isinstance(item, str):
                found.append(item)
            elif key in ("base_url", "url") and isinstance(item, str):  # url: an http agent's
                found += url_secrets(item)
            elif key in ("extra_body", "headers", "extra_headers", "default_headers", "env"):  # env: a command's
                found += secret_values(item)
            else:
                found += spec_secrets(item, _depth + 1)
    elif isinstance(spec, list | tuple):
        for item in spec:
            found += spec_secrets(item, _depth + 1)
    return found
