"""placeholder"""

from ..catalog import OpSpec


def specs() -> list[OpSpec]:
    return []
