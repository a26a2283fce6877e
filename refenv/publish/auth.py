"""Registry credentials: from the environment, else the Docker config the SDK reads; never shown anywhere."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from refenv.errors import RefenvError

USERNAME_VAR = "REFENV_REGISTRY_USERNAME"
PASSWORD_VAR = "REFENV_REGISTRY_PASSWORD"
# Where the docker SDK finds credentials when none are passed (docker/auth.py: DOCKER_CONFIG or ~/.docker).
DOCKER_CONFIG = "the Docker config (~/.docker/config.json or $DOCKER_CONFIG)"


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def auth_config(self) -> dict[str, str]:
        """What the docker SDK's push and pull take."""
        return {"username": self.username, "password": self.password}


def from_environment(environ: Mapping[str, str]) -> Credentials | None:
    """Both variables set: their credentials; neither: None (the Docker config decides); one: an error."""
    user, password = environ.get(USERNAME_VAR), environ.get(PASSWORD_VAR)
    if user is None and password is None:
        return None
    if not user or not password:
        missing = PASSWORD_VAR if user else USERNAME_VAR
        raise RefenvError(f"{missing} is not set (or empty) while the other registry variable is: set both, or "
                          f"neither to use {DOCKER_CONFIG}")
    return Credentials(user, password)


def source_of(credentials: Credentials | None) -> str:
    """Where the credentials came from, for people (never what they are)."""
    return f"{USERNAME_VAR} / {PASSWORD_VAR}" if credentials else DOCKER_CONFIG


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced: registry errors are shown, and some echo what they were sent."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
