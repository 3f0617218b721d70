"""inspect_signature: is it signed, by whom, intact? Mach-O code signatures per slice; a PE's Authenticode."""

from __future__ import annotations

import io
import os
import plistlib
from typing import Any
from typing import Literal

from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_str
from rea.plugin import read_regular
from rea_plugins.apple import codesign
from rea_plugins.apple import common
from rea_plugins.apple.model import Authenticode
from rea_plugins.apple.model import Certificate
from rea_plugins.apple.model import CodeDirectoryInfo
from rea_plugins.apple.model import PageHashes
from rea_plugins.apple.model import SignatureReport
from rea_plugins.apple.model import SliceSignature

Status = Literal["valid", "mismatch", "unsigned"]


def bad_signature(index: int, why: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"slice {index}: the code signature is malformed: {why}",
        remediation="The signature cannot be read; re-sign the binary or inspect it with inspect_macho.",
        details={"reason": "malformed_signature", "slice": index},
    )


SHORT_NAMES = {
    "common_name": "CN",
    "organization_name": "O",
    "organizational_unit_name": "OU",
    "country_name": "C",
    "locality_name": "L",
    "state_or_province_name": "ST",
    "email_address": "emailAddress",
}


def _name(name: Any) -> str:
    """A distinguished name as ``CN=..., O=...`` in the certificate's own order."""
    parts = []
    for key, value in name.native.items():
        for v in value if isinstance(value, list) else [value]:
            parts.append(f"{SHORT_NAMES.get(key, key)}={v}")
    return ", ".join(parts)


def _x509(cert: Any) -> Certificate:
    """An asn1crypto certificate's subject, issuer, SHA-256 fingerprint and serial (trust is not evaluated)."""
    return Certificate(
        subject=_name(cert.subject),
        issuer=_name(cert.issuer),
        sha256=cert.sha256.hex(),
        serial=f"{cert.serial_number:x}",
    )


def _certificate(cert: Any) -> Certificate:
    """A signify certificate, read the same way as a Mach-O CMS blob's."""
    from asn1crypto import x509

    return _x509(x509.Certificate.load(cert.to_der))


def cms_signers(payload: bytes) -> list[Certificate]:
    """The certificates a detached CMS signature carries (subjects and fingerprints; trust is not evaluated)."""
    if not payload:
        return []
    from asn1crypto import cms

    info = cms.ContentInfo.load(payload)
    if info["content_type"].native != "signed_data":
        return []
    certs = info["content"]["certificates"]
    return [_x509(c.chosen) for c in (certs or []) if c.name == "certificate"]


def _entitlements(raw: bytes) -> Any:
    try:
        value = plistlib.loads(raw)
    except (plistlib.InvalidFileException, ValueError, TypeError, KeyError, IndexError, OverflowError):
        return {"$unreadable": len(raw)}
    from rea_plugins.apple.plists import Normalizer

    return Normalizer(8, 500, 4096)(value)


def der_entitlements(raw: bytes) -> Any:
    """DER entitlements (Apple's ``[APPLICATION 16] {version, [CONTEXT 16] {SEQUENCE {key, value}...}}``, values
    BOOLEAN, INTEGER, UTF8String, SEQUENCE for arrays, [CONTEXT 16] for dictionaries) as JSON, decoded by asn1crypto;
    one that does not decode is ``{"$unreadable": size}``."""
    from asn1crypto import core

    budget = [4096]

    def elements(contents: bytes) -> list[Any]:
        out, at = [], 0
        while at < len(contents):
            budget[0] -= 1
            if budget[0] < 0:
                raise ValueError("too many elements")
            value = core.load(contents[at:], strict=False)
            out.append(value)
            at += len(value.dump())
        return out

    def node(value: Any, depth: int) -> Any:
        if depth > 16:
            raise ValueError("nested too deep")
        if value.class_ == 2 and value.tag == 16:  # a dictionary of {key, value} pairs
            out = {}
            for pair in elements(value.contents):
                key, item = elements(pair.contents)
                out[str(key.native)] = node(item, depth + 1)
            return out
        if value.class_ == 0 and value.tag == 16:  # an array
            return [node(v, depth + 1) for v in elements(value.contents)]
        if value.class_ == 0 and value.tag in (1, 2, 12):  # BOOLEAN, INTEGER, UTF8String
            native = value.native
            return native if not isinstance(native, int) or abs(native) < (1 << 53) else str(native)
        raise ValueError(f"unexpected element class {value.class_} tag {value.tag}")

    try:
        top = core.load(raw, strict=False)
        if top.class_ != 1 or top.tag != 16:
            raise ValueError("not [APPLICATION 16]")
        parts = elements(top.contents)
        found = node(parts[1], 0) if len(parts) == 2 else {}
        if not isinstance(found, dict):  # entitlements are a dictionary; an array or a scalar there is no DER form
            raise ValueError("the entitlements are not a dictionary")
        return found
    # AttributeError: asn1crypto parses some tags (ObjectDescriptor) into values with no ``native``.
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError):
        return {"$unreadable": len(raw)}


def slice_signature(f: common.MachOFile, index: int, files: dict[int, bytes] | None = None) -> SliceSignature:
    b = f.binaries[index]
    cpu = f.cpu(index)
    if not b.has_code_signature:
        return SliceSignature(index=index, cpu_type=cpu, status="unsigned")
    cmd = b.code_signature
    image = f.slice_bytes(index)
    start, size = int(cmd.data_offset), int(cmd.data_size)
    if start + size > len(image) or size < 12:
        raise bad_signature(index, f"LC_CODE_SIGNATURE points at {size} bytes at {start:#x}, outside the slice")
    try:
        sig = codesign.parse(image[start : start + size])
    except codesign.SignatureError as exc:
        raise bad_signature(index, str(exc)) from None
    if not sig.code_directories:
        raise bad_signature(index, "no code directory")
    directories: list[CodeDirectoryInfo] = []
    overall: Status = "valid"
    blobs = sig.blobs
    for cd in sig.code_directories:
        status, bad = codesign.verify_pages(cd, image)
        special = codesign.verify_special(cd, blobs, files)
        if status == "mismatch" or "mismatch" in special.values():
            overall = "mismatch"
        directories.append(
            CodeDirectoryInfo(
                identifier=cd.identifier,
                team_id=cd.team_id,
                version=f"{cd.version:#x}",
                flags=codesign.flag_names(cd.flags),
                hardened_runtime=bool(cd.flags & codesign.RUNTIME),
                hash_type=codesign.HASH_NAMES[cd.hash_type],
                code_limit=cd.code_limit,
                exec_segment_flags=codesign.flag_names(cd.exec_seg_flags, codesign.EXEC_SEG_FLAGS),
                page_hashes=PageHashes(
                    status=status,
                    page_size=cd.page_size,
                    pages=cd.code_slots,
                    mismatched=bad[:100],
                    special_slots=special,
                ),
                cd_hash=cd.cd_hash,
            )
        )
    by_magic = {bl.magic: bl for bl in blobs}
    ent = by_magic.get(codesign.ENTITLEMENTS)
    der = by_magic.get(codesign.DER_ENTITLEMENTS)
    req = by_magic.get(codesign.REQUIREMENTS)
    cms = by_magic.get(codesign.CMS)
    try:
        signers = cms_signers(cms.payload) if cms is not None else []
    except (ValueError, TypeError, KeyError):
        raise bad_signature(index, "the CMS signature does not decode") from None
    return SliceSignature(
        index=index,
        cpu_type=cpu,
        status=overall,
        code_directories=directories,
        entitlements=_entitlements(ent.payload) if ent is not None else None,
        der_entitlements=der_entitlements(der.payload) if der is not None else None,
        requirements=len(req.payload) if req is not None else None,
        signers=signers,
        blobs=[codesign.SLOT_NAMES.get(bl.slot, f"slot_{bl.slot:#x}") for bl in blobs],
        ad_hoc=any(cd.flags & 0x2 for cd in sig.code_directories),
    )


def authenticode(data: bytes) -> Authenticode:
    """signify's reading of a PE's Authenticode: signers, the certificates carried, the digest against the bytes."""
    try:
        from signify.authenticode.signed_file.pe import SignedPEFile
        from signify.exceptions import SignifyError
    except Exception as exc:
        raise ReaError(
            "provider_unavailable",
            f"signify cannot load on this host ({type(exc).__name__}: {str(exc)[:120]})",
            remediation=(
                "oscrypto 1.3.0 (signify's backend) cannot read OpenSSL 3.0.10+ version strings; install its fixed "
                "source: pip install 'oscrypto @ git+https://github.com/wbond/oscrypto.git@76bfdcb'"
            ),
            details={"reason": "signify_unavailable"},
        ) from None

    try:
        pe = SignedPEFile(io.BytesIO(data))
        signatures = list(pe.iter_embedded_signatures(include_nested=True, ignore_parse_errors=False))
    except SignifyError as exc:
        if (
            "not found" in str(exc).lower()
            or "no certificate table" in str(exc).lower()
            or "does not contain" in str(exc).lower()
        ):
            return Authenticode(status="unsigned", signers=[], chain=[], digest_algorithm=None)
        return Authenticode(status="invalid", signers=[], chain=[], digest_algorithm=None, reason=type(exc).__name__)
    if not signatures:
        return Authenticode(status="unsigned", signers=[], chain=[], digest_algorithm=None)
    signers: list[Certificate] = []
    chain: list[Certificate] = []
    status: Literal["valid", "mismatch"] = "valid"
    algorithm = None
    for s in signatures:
        certs = list(s.certificates)
        chain.extend(_certificate(c) for c in certs if _certificate(c) not in chain)
        info = s.signer_info
        own = [c for c in certs if c.issuer == info.issuer and c.serial_number == info.serial_number]
        signers.extend(_certificate(c) for c in own)
        algorithm = s.indirect_data.digest_algorithm.__name__.replace("openssl_", "")
        if pe.get_fingerprint(s.indirect_data.digest_algorithm) != s.indirect_data.digest:
            status = "mismatch"
    return Authenticode(status=status, signers=signers, chain=chain, digest_algorithm=algorithm)


def _bundle_files(executable: str) -> dict[int, bytes]:
    """The bundle files an executable's special slots hash: Info.plist (slot 1), _CodeSignature/CodeResources (3)."""
    from rea_plugins.apple.plists import bundle_of
    from rea_plugins.apple.plists import info_plist

    bundle = bundle_of(executable)
    if bundle is None:
        return {}
    out = {}
    for slot, path in ((1, info_plist(bundle)), (3, os.path.join(bundle, "_CodeSignature", "CodeResources"))):
        if path and os.path.isfile(path):
            try:
                out[slot] = read_regular(path, 16 << 20, code="unsupported_target", what="bundle file")
            except (OSError, ReaError):
                continue
    return out


@common.guarded
def inspect_signature(call: ToolCall) -> Evidence:
    target = common.target_of(call)
    data = common.read_bytes(target)
    if data[:2] == b"MZ":
        auth = authenticode(data)
        report = SignatureReport(format="pe", status=auth.status, authenticode=auth)
        return common.evidence(
            call, target, report, ["Certificate trust is not evaluated: subjects and fingerprints only."]
        )
    f = common.MachOFile(data)
    files = _bundle_files(target.resolved_path)
    slices = [slice_signature(f, i, files) for i in f.pick(arg_str(call.args, "architecture"))]
    states = {s.status for s in slices}
    status: Literal["valid", "mismatch", "unsigned"] = (
        "mismatch" if "mismatch" in states else "unsigned" if "unsigned" in states else "valid"
    )
    report = SignatureReport(format="mach-o", status=status, slices=slices)
    return common.evidence(
        call,
        target,
        report,
        [
            "Certificate trust is not evaluated: subjects and fingerprints only.",
            "The bundle's Info.plist and CodeResources are checked against their special slots when the executable "
            "is inside a bundle; the files CodeResources lists are not.",
        ],
    )
