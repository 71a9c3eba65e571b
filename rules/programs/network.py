"""curl and wget: what they write, read and upload. Which hosts they may contact is for
sources.json (narrowing reads the URLs with these tables); here is everything else their
options do. Both tables are partial, so an abbreviated option is asked about."""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit

from rules.programs.base import (
    Abbreviations,
    Arity,
    Effect,
    Parsed,
    Program,
    Understanding,
    flags,
    option_uses,
    table,
    valued,
)
from rules.words import Word, WordKind

READ, WRITE, NETWORK = Effect.READ, Effect.WRITE, Effect.NETWORK
UNSAFE, CONFIG = Effect.UNSAFE, Effect.CONFIG

_CURL_TABLE = table(
    flags(
        "-h,--help -V,--version -s,--silent -S,--show-error -L,--location -f,--fail "
        "--fail-with-body --fail-early -I,--head -i,--include -v,--verbose --compressed "
        "-g,--globoff -#,--progress-bar --no-progress-meter -N,--no-buffer -4,--ipv4 "
        "-6,--ipv6 --http1.0 --http1.1 --http2 -G,--get -q,--disable --retry-all-errors "
        "-Z,--parallel --raw --create-dirs --no-clobber"
    ),
    valued(
        "-X,--request -A,--user-agent -e,--referer -m,--max-time --connect-timeout --retry "
        "--retry-delay --retry-max-time --max-filesize --limit-rate -u,--user -r,--range "
        "--data-raw --parallel-max"
    ),
    # @FILE / <FILE inside these read a file: see _curl.
    valued("-d,--data --data-binary --data-ascii -H,--header -w,--write-out -b,--cookie"),
    valued("--data-urlencode -F,--form"),
    valued("--url", NETWORK),
    valued(
        "-o,--output -D,--dump-header -c,--cookie-jar --output-dir --trace --trace-ascii "
        "--stderr --libcurl",
        WRITE,
    ),
    flags("-O,--remote-name"),  # writes the URL's last path segment: see _curl
    valued("-T,--upload-file", READ),
    flags(
        "-J,--remote-header-name --remote-name-all",
        UNSAFE,
        "writes a file the server names",
    ),
    flags("-k,--insecure", UNSAFE, "turns off TLS verification"),
    valued("-K,--config", CONFIG, "reads options from a file"),
    valued("--cacert --capath -E,--cert --key", CONFIG, "replaces the TLS trust or identity"),
    valued(
        "-x,--proxy --preproxy --resolve --connect-to --doh-url --unix-socket "
        "--abstract-unix-socket",
        UNSAFE,
        "redirects the connection",
    ),
    abbreviations=Abbreviations.NONE,
)


def _url_file(word: Word) -> Word | None:
    """The file curl -O / wget write for a URL: its last path segment."""
    if word.kind is not WordKind.LITERAL:
        return None
    target = word.value if "://" in word.value else "http://" + word.value
    name = posixpath.basename(urlsplit(target).path)
    return Word(name) if name and name not in {".", ".."} else None


def _curl(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    urls = [*parsed.operands, *parsed.values("--url")]
    found.destinations.extend(parsed.operands)  # --url's values: option_uses
    if not urls:
        found.problems.append("curl without a URL")
    for given in parsed.given:
        value = given.value
        if value is None or given.option.effect is not Effect.HARMLESS:
            continue
        text = value.value
        if {"--data-urlencode", "--form"} & set(given.option.names) and (
            "@" in text or "<" in text
        ):
            found.problems.append(f"curl {given.name} {value.display} may upload a file")
        elif text.startswith("@") and given.name not in {"-u", "--user", "-X", "--request"}:
            found.read([Word(text[1:], value.kind)], f"curl {given.name}")
        elif given.name in {"-b", "--cookie"} and "=" not in text:
            found.read([value], "curl --cookie")  # without "=", a cookie file
    for url in urls:
        if url.kind is not WordKind.LITERAL:
            continue  # narrowing asks about a URL only known at run time
        if not parsed.has("-g") and any(char in url.value for char in "{}[]"):
            found.problems.append(f"curl expands the URL pattern {url.display} (use -g)")
    if parsed.has("-O"):
        for url in urls:
            target = _url_file(url)
            if target is None:
                found.problems.append(f"curl -O: the file name of {url.display} is not known")
            else:
                found.write([target], "curl -O")


CURL = Program(("curl",), _CURL_TABLE, _curl)

_WGET_TABLE = table(
    flags("-h,--help -V,--version -q -v -c -N -S -4 -6"),
    # wget's boolean long options take an attached on/off (--quiet=off): init.c's cmd_boolean.
    valued(
        "--quiet --verbose --continue --timestamping --spider --server-response --no-clobber "
        "--inet4-only --inet6-only",
        arity=Arity.OPTIONAL,
    ),
    valued("-t,--tries -T,--timeout -U,--user-agent --header --limit-rate --wait"),
    valued("-O,--output-document -o,--output-file -a,--append-output", WRITE),
    valued("-P,--directory-prefix", WRITE),
    flags("-r -m -p", UNSAFE, "writes many files"),
    valued(
        "--recursive --mirror --page-requisites", UNSAFE, "writes many files", arity=Arity.OPTIONAL
    ),
    flags("--no-check-certificate", UNSAFE, "turns off TLS verification"),
    valued("-i,--input-file", UNSAFE, "reads URLs from a file"),
    valued("-e,--execute --config", CONFIG, "runs wgetrc commands"),
    valued("--ca-certificate --certificate", CONFIG, "replaces the TLS trust or identity"),
)


def _wget(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    found.destinations.extend(parsed.operands)
    if not parsed.operands:
        found.problems.append("wget without a URL")
    if parsed.values("-O", "--output-document"):
        return
    for url in parsed.operands:
        target = _url_file(url)
        found.write([target or Word("index.html")], "wget (file named after the URL)")


WGET = Program(("wget",), _WGET_TABLE, _wget)

PROGRAMS = (CURL, WGET)
