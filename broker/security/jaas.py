"""JAAS configuration text, as Kafka's `sasl.jaas.config` holds it.

One or more login modules, each `<class> <flag> [<name>=<value> ...];`, where a value is a
word or a double-quoted string (backslash escapes the next character), for example

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Kafka reads these the way Java's JAAS ConfigFile does (a StreamTokenizer); this parser takes
the same text, and refuses what Kafka refuses: no module, a missing flag or semicolon, an
option without a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})
_SYMBOLS = frozenset(";={}")


class JaasConfigError(ValueError):
    """The text is not a JAAS configuration; the message says where."""


@dataclass(frozen=True, slots=True)
class LoginModule:
    class_name: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def parse_jaas_config(text: str) -> list[LoginModule]:
    """The login modules of a `sasl.jaas.config` value (at least one)."""
    tokens = _tokenize(text)
    modules: list[LoginModule] = []
    position = 0
    while position < len(tokens):
        module, position = _parse_module(tokens, position)
        modules.append(module)
    if not modules:
        raise JaasConfigError("JAAS config has no login module")
    return modules


def parse_jaas_file(text: str) -> dict[str, list[LoginModule]]:
    """The sections of a JAAS file (`java.security.auth.login.config`), by name:
    `<name> { <login module>; ... };` each, as Java's ConfigFile reads them."""
    tokens = _tokenize(text)
    sections: dict[str, list[LoginModule]] = {}
    position = 0
    while position < len(tokens):
        name, quoted = tokens[position]
        if quoted or name in _SYMBOLS:
            raise JaasConfigError(f"expected a JAAS section name, found {name!r}")
        if tokens[position + 1 : position + 2] != [("{", False)]:
            raise JaasConfigError(f"JAAS section {name}: expected '{{' after its name")
        if name in sections:
            raise JaasConfigError(f"JAAS section {name} appears twice")
        position += 2
        modules: list[LoginModule] = []
        while tokens[position : position + 1] != [("}", False)]:
            if position >= len(tokens):
                raise JaasConfigError(f"JAAS section {name} has no closing '}}'")
            module, position = _parse_module(tokens, position)
            modules.append(module)
        if tokens[position + 1 : position + 2] != [(";", False)]:
            raise JaasConfigError(f"JAAS section {name}: expected ';' after its '}}'")
        sections[name] = modules
        position += 2
    return sections


def _parse_module(tokens: list[tuple[str, bool]], position: int) -> tuple[LoginModule, int]:
    def take(what: str) -> tuple[str, bool]:
        nonlocal position
        if position >= len(tokens):
            raise JaasConfigError(f"JAAS config ends where {what} was expected")
        token = tokens[position]
        position += 1
        return token

    class_name, quoted = take("a login module class")
    if quoted or class_name in _SYMBOLS:
        raise JaasConfigError(f"expected a login module class, found {class_name!r}")
    flag, quoted = take("a control flag")
    if quoted or flag.lower() not in CONTROL_FLAGS:
        raise JaasConfigError(
            f"login module {class_name}: expected a control flag"
            f" ({', '.join(sorted(CONTROL_FLAGS))}), found {flag!r}"
        )
    options: dict[str, str] = {}
    while True:
        name, quoted = take("an option or ';'")
        if name == ";" and not quoted:
            return LoginModule(class_name, flag.lower(), options), position
        if quoted or name in _SYMBOLS:
            raise JaasConfigError(f"login module {class_name}: expected an option name, {name!r}")
        equals, quoted = take(f"'=' after {name}")
        if equals != "=" or quoted:
            raise JaasConfigError(f"login module {class_name}: option {name} has no '='")
        value, quoted = take(f"a value for {name}")
        if value in _SYMBOLS and not quoted:
            raise JaasConfigError(f"login module {class_name}: option {name} has no value")
        options[name] = value


def _tokenize(text: str) -> list[tuple[str, bool]]:
    """(token, was quoted) pairs: words, quoted strings, and the symbols ; = { }."""
    tokens: list[tuple[str, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif char in _SYMBOLS:
            tokens.append((char, False))
            index += 1
        elif char == '"':
            value, index = _quoted(text, index + 1)
            tokens.append((value, True))
        elif text.startswith("//", index):  # a comment to the end of the line
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end < 0:
                raise JaasConfigError("JAAS config has an unterminated /* comment")
            index = end + 2
        else:
            start = index
            while index < len(text) and not (
                text[index].isspace() or text[index] in _SYMBOLS or text[index] == '"'
            ):
                index += 1
            tokens.append((text[start:index], False))
    return tokens


def _quoted(text: str, index: int) -> tuple[str, int]:
    characters: list[str] = []
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(characters), index + 1
        if char == "\\" and index + 1 < len(text):
            index += 1
            char = text[index]
        characters.append(char)
        index += 1
    raise JaasConfigError("JAAS config has an unterminated quoted string")


def module_option(modules: list[LoginModule], class_name: str, option: str) -> str | None:
    """`option` of the first login module of `class_name` (Kafka's configEntryOption)."""
    for module in modules:
        if module.class_name == class_name and option in module.options:
            return module.options[option]
    return None
