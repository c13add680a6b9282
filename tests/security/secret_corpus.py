"""Secret shapes and benign code/config for the redaction tests (issue 26), built at test time.

Every secret is a fake value drawn from a seeded generator in the shape its issuer documents publicly (AWS
IAM key ids and secret keys, GitHub's token prefixes, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI,
Google, Azure connection strings, PEM/OpenSSH/PGP blocks, JWT, HTTP Basic and Bearer, URL credentials, ...).
They are generated rather than committed, so no scanner mistakes this repository for a leak. ``secret`` is
the part that must not reach the model.
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Any

_RNG = random.Random(26)
UP = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def _r(chars: str, n: int) -> str:
    return "".join(_RNG.choice(chars) for _ in range(n))


def _pem(kind: str) -> str:
    body = "\n".join(_r(B64, 64) for _ in range(6))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def secret_cases() -> list[dict[str, Any]]:
    """``{"kind", "row", "secret"}``: a tool row holding one secret (``secret``: what must not be shown)."""
    cases: list[dict[str, Any]] = []

    def add(kind: str, row: Any, secret: str) -> None:
        cases.append({"kind": kind, "row": row, "secret": secret})

    akia = "AKIA" + _r(UP, 16)
    add("aws_access_key_id", {"log": f"using key {akia} for s3"}, akia)
    asia = "ASIA" + _r(UP, 16)
    add("aws_session_key_id", {"env": f"AWS_ACCESS_KEY_ID={asia}"}, asia)
    aws_secret = _r(B64, 40)
    add("aws_secret_access_key", {"cfg": f"aws_secret_access_key = {aws_secret}"}, aws_secret)
    aws_secret2 = _r(B64, 40)
    add("aws_secret_json_key", {"creds": {"SecretAccessKey": aws_secret2, "Expiration": "2026-12-01"}}, aws_secret2)
    for prefix in ("ghp", "gho", "ghs"):
        tok = f"{prefix}_" + _r(ALNUM, 36)
        add(f"github_{prefix}", {"msg": f"cloned with {tok}"}, tok)
    fine = "github_pat_" + _r(ALNUM, 22) + "_" + _r(ALNUM, 59)
    add("github_fine_grained", {"msg": f"GITHUB_TOKEN: {fine}"}, fine)
    glpat = "glpat-" + _r(ALNUM, 20)
    add("gitlab_pat", {"out": f"remote: https://oauth2:{glpat}@gitlab.example/x.git"}, glpat)
    xoxb = f"xoxb-{_r(string.digits, 12)}-{_r(string.digits, 13)}-{_r(ALNUM, 24)}"
    add("slack_bot", {"text": f"slack token {xoxb}"}, xoxb)
    hook = f"https://hooks.slack.com/services/T{_r(UP, 8)}/B{_r(UP, 10)}/{_r(ALNUM, 24)}"
    add("slack_webhook", {"url": hook}, hook.rsplit("/", 1)[1])
    sk_live = "sk_live_" + _r(ALNUM, 24)
    add("stripe_secret", {"charge": f"Stripe key {sk_live}"}, sk_live)
    rk_live = "rk_live_" + _r(ALNUM, 24)
    add("stripe_restricted", {"charge": rk_live}, rk_live)
    openai = "sk-proj-" + _r(ALNUM + "_-", 48)
    add("openai_project", {"env": f"OPENAI_API_KEY={openai}"}, openai)
    anth = "sk-ant-api03-" + _r(ALNUM + "_-", 60)
    add("anthropic", {"header": f"x-api-key: {anth}"}, anth)
    gapi = "AIza" + _r(ALNUM + "_-", 35)
    add("google_api_key", {"maps": f"https://maps.example/api?key={gapi}"}, gapi)
    gocspx = "GOCSPX-" + _r(ALNUM + "_-", 28)
    add("google_oauth_secret", {"client": f"client secret is {gocspx}"}, gocspx)
    head = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("=")
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "42", "name": "x"}).encode()).decode().rstrip("=")
    jwt = f"{head}.{claims}.{_r(ALNUM + '_-', 43)}"
    add("jwt", {"cookie": f"session={jwt}"}, jwt.rsplit(".", 1)[1])
    for kind in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        pem = _pem(kind)
        add("pem_" + kind.lower().replace(" ", "_"), {"file": pem}, pem.split("\n")[2])
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(_r(B64, 64) for _ in range(5))
    pgp += "\n-----END PGP PRIVATE KEY BLOCK-----"
    add("pgp_private_key", {"key": pgp}, pgp.split("\n")[3])
    sa = {"type": "service_account", "private_key_id": _r(HEX, 40), "private_key": _pem("PRIVATE KEY") + "\n"}
    add("gcp_service_account_json", {"file": json.dumps(sa)}, sa["private_key"].split("\n")[1])
    basic = base64.b64encode(f"admin:{_r(ALNUM, 14)}".encode()).decode()
    add("http_basic", {"request": f"Authorization: Basic {basic}"}, basic)
    bearer = _r(ALNUM + "._-", 40)
    add("http_bearer", {"request": f"Authorization: Bearer {bearer}"}, bearer)
    pg_pw = _r(ALNUM, 16)
    add("postgres_url", {"dsn": f"postgresql://app:{pg_pw}@db.internal:5432/orders"}, pg_pw)
    mongo_pw = _r(ALNUM, 18)
    add("mongodb_srv_url", {"dsn": f"mongodb+srv://svc:{mongo_pw}@cluster0.example.net/db"}, mongo_pw)
    redis_pw = _r(ALNUM, 20)
    add("redis_url", {"cache": f"redis://:{redis_pw}@cache:6379/0"}, redis_pw)
    db_pw = _r(ALNUM, 12)
    add("env_db_password", {"env": f"DB_PASSWORD={db_pw}"}, db_pw)
    yaml_pw = _r(ALNUM + "!@#", 14)
    add("yaml_password", {"config": f'database:\n  user: app\n  password: "{yaml_pw}"'}, yaml_pw)
    api = _r(ALNUM, 32)
    add("json_api_key", {"settings": {"service": {"api_key": api}}}, api)
    django = _r(ALNUM + "!@#%^&*(-_=+)", 50)
    add("django_secret_key", {"settings_py": f"SECRET_KEY = '{django}'"}, django)
    twilio = "SK" + _r(HEX, 32)
    add("twilio_api_key", {"sms": f"twilio key {twilio}"}, twilio)
    sg = f"SG.{_r(ALNUM + '_-', 22)}.{_r(ALNUM + '_-', 43)}"
    add("sendgrid", {"mail": f"SENDGRID_API_KEY={sg}"}, sg)
    npm = "npm_" + _r(ALNUM, 36)
    add("npm_token", {"npmrc": f"//registry.npmjs.org/:_authToken={npm}"}, npm)
    pypi = "pypi-AgEIcHlwaS5vcmc" + _r(ALNUM + "_-", 70)
    add("pypi_token", {"pypirc": f"password = {pypi}"}, pypi)
    mc = _r(HEX, 32) + "-us12"
    add("mailchimp", {"list": f"mailchimp {mc}"}, mc)
    azure = _r(B64, 86) + "=="
    conn = f"DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={azure};EndpointSuffix=core.windows.net"
    add("azure_storage_connection", {"conn": conn}, azure)
    sas = _r(B64, 43) + "="
    add("azure_service_bus", {"conn": f"Endpoint=sb://ns.example/;SharedAccessKeyName=root;SharedAccessKey={sas}"}, sas)
    tg = f"{_r(string.digits, 10)}:AA{_r(ALNUM + '_-', 33)}"
    add("telegram_bot", {"bot": f"telegram {tg}"}, tg)
    sq = "sq0csp-" + _r(ALNUM + "_-", 43)
    add("square_oauth", {"pay": f"square secret {sq}"}, sq)
    shp = "shpat_" + _r(HEX, 32)
    add("shopify", {"shop": f"X-Shopify-Access-Token: {shp}"}, shp)
    hvs = "hvs." + _r(ALNUM + "_-", 90)
    add("vault_token", {"vault": f"VAULT_TOKEN={hvs}"}, hvs)
    heroku = f"{_r(HEX, 8)}-{_r(HEX, 4)}-{_r(HEX, 4)}-{_r(HEX, 4)}-{_r(HEX, 12)}"
    add("heroku_api_key", {"env": {"HEROKU_API_KEY": heroku}}, heroku)
    dd = _r(HEX, 32)
    add("datadog_api_key", {"env": f"DD_API_KEY={dd}"}, dd)
    # evasions: invisible characters, compatibility forms, secrets as object keys, deep nesting
    zw = "AKIA" + _r(UP, 8) + "\u200b" + _r(UP, 8)
    add("zero_width_in_key_id", {"log": f"key {zw} used"}, zw.replace("\u200b", ""))
    full = "ghp_" + _r(ALNUM, 36)
    add("fullwidth_github", {"log": "token " + "".join(chr(ord(c) + 0xFEE0) for c in full)}, full)
    as_key = "ghp_" + _r(ALNUM, 36)
    add("secret_as_object_key", {"tokens": {as_key: "active"}}, as_key)
    deep = _r(ALNUM, 24)
    add("deeply_nested_password", {"a": {"b": [{"c": {"d": {"password": deep}}}]}}, deep)
    return cases


BENIGN: list[dict[str, Any]] = [
    {"commit": "3f786850e387550fdab836ed7e6dc881de23001b", "message": "fix: retry the upload on 503"},
    {"id": "550e8400-e29b-41d4-a716-446655440000", "status": "shipped"},
    {"image": "nginx:1.25.3@sha256:" + "a" * 12 + "0123456789abcdef" * 3 + "b" * 4},
    {"code": "def login(user, password):\n    return check_password(user, password)"},
    {"code": "password_field = forms.CharField(widget=forms.PasswordInput, max_length=128)"},
    {"oauth": {"token_type": "bearer", "expires_in": 3600, "scope": "read:orders"}},
    {"doc": "Set the Authorization header to Bearer followed by your token; never log it."},
    {"shell": "export PATH=/usr/local/bin:$PATH && make test"},
    {"nginx": "server { listen 8080; server_name api.example.org; proxy_read_timeout 60s; }"},
    {"yaml": "replicas: 3\nresources:\n  limits:\n    memory: 512Mi\n    cpu: 500m"},
    {"toml": '[service.limits]\nrequest_timeout_s = 30\nmax_tokens = 4096\nsecret_ref = "vault://kv/app"'},
    {"json": {"max_tokens": 1024, "temperature": 0.2, "model": "gpt-4o-mini"}},
    {"sql": "SELECT id, email_verified, password_reset_at FROM users WHERE id = 42;"},
    {"env": "LOG_LEVEL=info\nPORT=8080\nNODE_ENV=production"},
    {"python": "hashlib.sha256(data).hexdigest()  # 64 hex digits"},
    {"k8s": "kind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque"},
    {"version": "v2.14.3", "build": "20261130.4", "checksum": "md5:9e107d9d372bb6826bd81d3542a419d6"},
    {"url": "https://docs.example.com/guide/install?version=2#proxy-settings"},
    {"ip": "nameserver 8.8.8.8\nnameserver 1.1.1.1"},
    {"git": "git clone https://github.com/example/project.git && git checkout 7d9a1c2"},
    {"docker": "RUN pip install --no-cache-dir -r requirements.txt"},
    {"ts": "2026-12-01T20:29:24Z", "level": "warn", "msg": "token bucket refilled: 120 tokens/min"},
    {"js": "const apiBase = process.env.API_BASE ?? 'http://localhost:3000';"},
    {"go": "func (s *Server) Close() error { return s.ln.Close() }"},
    {"java": "private static final int MAX_RETRIES = 5;"},
    {"base64_text": "SGVsbG8sIHdvcmxkIQ==", "note": "a greeting, encoded"},
    {"regex": "^[A-Za-z0-9._%+-]+$"},
    {"markdown": "## Keys\nRotate keys every 90 days. See `admit.toml` for `key_env`."},
    {"csv": "order,status,total\n1001,failed,19.99\n1002,shipped,5.00"},
    {"terraform": 'resource "aws_s3_bucket" "logs" { bucket = "acme-logs-prod" }'},
    {"ini": "[client]\nhost = db.internal\nport = 5432\nuser = readonly"},
    {"uuid_list": ["0b5c6a2e-7f10-4c33-9d1e-2f0e1b7c9a44", "9f1c2d3e-4b5a-6c7d-8e9f-0a1b2c3d4e5f"]},
]
"""Code and configuration a tool may return that holds no secret: nothing in them may be redacted."""
