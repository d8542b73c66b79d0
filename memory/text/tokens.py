"""Secret tokens recognisable by their shape (vendor key formats), and the redaction marker.

The shapes follow detect-secrets' plugins plus current vendors it lacks (see memory/text/redact.py
for why the package itself is not used). A shape's ``check`` keeps look-alikes that are words or
names (``sk-learn-compatibility-notes``); its needles let most rules skip most texts cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["JWT_RE", "MARK", "TOKEN_RULES", "TokenRule", "is_marker", "keylike", "mark", "random_looking"]

MARK = "[REDACTED:"


def mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def is_marker(value: str) -> bool:
    return value.lstrip("\"'").startswith(MARK)


def random_looking(value: str) -> bool:
    """Digits, or many case changes (``aBcDeF...``): a token, not a word or a CamelCase name."""
    if re.search(r"[0-9]", value):
        return True
    letters = re.sub(r"[^A-Za-z]", "", value)
    if len(letters) < 16 or letters.islower() or letters.isupper():
        return False
    return len(re.findall(r"[a-z][A-Z]|[A-Z][A-Z][a-z]", letters)) >= 3 and not re.fullmatch(
        r"(?:[A-Z][a-z]+)+", letters
    )


JWT_RE = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")


def keylike(body: str) -> bool:
    """Key material, not hyphenated words like ``sk-learn-compatibility-notes``: a stretch of
    16+ characters mixing letters and digits, or a long mixed-case run with digits."""
    for part in re.split(r"[-_]", body):
        if len(part) >= 16 and re.search(r"[0-9]", part) and re.search(r"[A-Za-z]", part):
            return True
    return (
        len(body) >= 32
        and re.search(r"[0-9]", body) is not None
        and re.search(r"[a-z]", body) is not None
        and re.search(r"[A-Z]", body) is not None
    )


def _sk_check(token: str) -> bool:
    return keylike(re.sub(r"^sk-(?:ant-|proj-|svcacct-|admin-|None-)?", "", token))


def _mixed_check(token: str) -> bool:
    """Letters-only vendor tokens (Hugging Face): random mixed case, not a snake_case name."""
    body = token.split("_", 1)[1]
    return keylike(body) or random_looking(body)


class TokenRule:
    """A token shape. ``needles``: literal strings one of which the text must contain (or a
    cheap pattern it must match) for the pattern to be worth running: a plain substring search
    skips most rules on most texts."""

    __slots__ = ("_compiled", "check", "kind", "needles", "source")

    def __init__(
        self,
        kind: str,
        needles: tuple[str, ...] | re.Pattern[str],
        pattern: str,
        check: Callable[[str], bool] | None = None,
    ) -> None:
        self.kind = kind
        self.needles = needles
        self.source = pattern
        # Compiled when first needed: three dozen of them at import were a tenth of the app's
        # first frame, and most texts never reach most rules (the needles).
        self._compiled: re.Pattern[str] | None = None
        self.check = check

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled

    def apply(self, text: str) -> str:
        if isinstance(self.needles, re.Pattern):
            if not self.needles.search(text):
                return text
        elif not any(n in text for n in self.needles):
            return text

        def repl(m: re.Match[str]) -> str:
            if self.check is not None and not self.check(m.group(0)):
                return m.group(0)
            return mark(self.kind)

        return self.pattern.sub(repl, text)


_S = r"(?<![A-Za-z0-9_-])"  # a token starts after no token character
_E = r"(?![A-Za-z0-9_-])"  # ... and ends before none

TOKEN_RULES: list[TokenRule] = [
    TokenRule("anthropic_key", ("sk-ant-",), rf"{_S}sk-ant-[A-Za-z0-9_-]{{20,}}", _sk_check),
    TokenRule(
        "openai_key",
        ("sk-",),
        rf"{_S}sk-(?:proj-|svcacct-|admin-|None-|or-v1-)?[A-Za-z0-9_-]{{20,}}",
        _sk_check,
    ),
    TokenRule("stripe_key", ("k_live_", "k_test_"), rf"{_S}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{{10,}}"),
    TokenRule("stripe_key", ("whsec_",), rf"{_S}whsec_[0-9A-Za-z+/=]{{24,}}"),
    TokenRule(
        "aws_access_key",
        ("AKIA", "ASIA", "A3T", "ABIA", "ACCA"),
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    TokenRule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    TokenRule(
        "gitlab_token",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
            "gltst-",
            "GR1348941",
        ),
        rf"{_S}(?:(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas|gltst)-[A-Za-z0-9_-]{{20,}}"
        rf"|GR1348941[A-Za-z0-9_-]{{20,}}){_E}",
    ),
    TokenRule(
        "grafana_token",
        ("glsa_", "glc_"),
        rf"{_S}(?:glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}|glc_[A-Za-z0-9+/]{{32,}}={{0,2}})",
    ),
    TokenRule("npm_token", ("npm_",), rf"{_S}npm_[A-Za-z0-9]{{36}}{_E}"),
    TokenRule("huggingface_token", ("hf_",), rf"{_S}hf_[A-Za-z0-9]{{30,}}{_E}", _mixed_check),
    TokenRule("pypi_token", ("pypi-AgE",), rf"{_S}pypi-AgE[A-Za-z0-9_-]{{50,}}"),
    TokenRule("sendgrid_key", ("SG.",), rf"{_S}SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_E}"),
    TokenRule(
        "slack_token",
        ("xox", "xapp-"),
        r"(?<![A-Za-z0-9_-])(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
    ),
    TokenRule(
        "slack_webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{10,}",
    ),
    TokenRule(
        "discord_webhook",
        ("/api/webhooks/",),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
    ),
    TokenRule("google_api_key", ("AIza",), rf"{_S}AIza[0-9A-Za-z_-]{{35}}{_E}"),
    TokenRule("google_oauth_secret", ("GOCSPX-",), rf"{_S}GOCSPX-[A-Za-z0-9_-]{{28}}{_E}"),
    TokenRule("twilio_key", ("SK",), r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    TokenRule("mailchimp_key", ("-us",), r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
    TokenRule("square_token", ("sq0",), rf"{_S}sq0(?:csp|atp|idp)-[0-9A-Za-z_-]{{22,43}}{_E}"),
    TokenRule("telegram_bot_token", (":A",), r"(?<![0-9])[0-9]{8,10}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])"),
    TokenRule(
        "discord_bot_token",
        re.compile(r"\.[A-Za-z0-9_-]{6}\."),
        r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])",
        lambda t: keylike(t.replace(".", "")),
    ),
    TokenRule("artifactory_token", ("AKCp",), rf"{_S}AKCp[A-Za-z0-9]{{64,}}{_E}"),
    TokenRule("digitalocean_token", ("_v1_",), rf"{_S}do[opr]_v1_[a-f0-9]{{64}}{_E}"),
    TokenRule("shopify_token", ("shp",), rf"{_S}shp(?:at|ss|ca|pa)_[a-fA-F0-9]{{32}}{_E}"),
    TokenRule("atlassian_token", ("ATATT3",), rf"{_S}ATATT3[A-Za-z0-9_=-]{{30,}}"),
    TokenRule("linear_key", ("lin_api_",), rf"{_S}lin_api_[A-Za-z0-9]{{40}}{_E}"),
    TokenRule("doppler_token", ("dp.",), rf"{_S}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{{40,}}{_E}"),
    TokenRule("postman_key", ("PMAK-",), rf"{_S}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}"),
    TokenRule("databricks_token", ("dapi",), rf"{_S}dapi[a-f0-9]{{32}}(?:-[0-9])?{_E}"),
    TokenRule("age_secret_key", ("AGE-SECRET-KEY-1",), rf"{_S}AGE-SECRET-KEY-1[0-9A-Z]{{58}}{_E}"),
    TokenRule("vault_token", ("hvs.", "hvb."), rf"{_S}hv[sb]\.[A-Za-z0-9_-]{{24,}}{_E}"),
    TokenRule("pulumi_token", ("pul-",), rf"{_S}pul-[a-f0-9]{{40}}{_E}"),
    TokenRule("sentry_token", ("sntry",), rf"{_S}sntry[su]_[A-Za-z0-9+/=_-]{{40,}}"),
    TokenRule("groq_key", ("gsk_",), rf"{_S}gsk_[A-Za-z0-9]{{48,}}{_E}"),
    TokenRule("xai_key", ("xai-",), rf"{_S}xai-[A-Za-z0-9]{{60,}}{_E}"),
    TokenRule("replicate_token", ("r8_",), rf"{_S}r8_[A-Za-z0-9]{{37}}{_E}"),
]
