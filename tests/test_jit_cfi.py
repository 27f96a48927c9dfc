"""CFI generation for JIT kernels: hand-made prologues with known CFI, shapes that must get none,
and the generated tables read back by pyelftools' DWARF decoder."""

from __future__ import annotations

import io

import pytest
from elftools.dwarf.callframe import CallFrameInfo
from elftools.dwarf.structs import DWARFStructs
from helpers.asm import ASM, POSTAMBLE, PREAMBLE, assemble
from helpers.extras import need

from flamegraph.frameworks.jit import cfi
from flamegraph.frameworks.jit.unwind import align, build_unwind

capstone = need("capstone")  # the analysis itself disassembles with it: the whole file needs the jit extra


def test_the_encodings_are_what_they_claim() -> None:
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    for text, code in ASM.items():
        (insn,) = list(md.disasm_lite(bytes.fromhex(code), 0))
        assert f"{insn[2]} {insn[3]}".strip() == text


# After each push at 0,1,2,4,6,8: advance, CFA offset (0x0e), register saved at CFA-off (0x80|reg, off/8).
PREAMBLE_CFI = "".join(["410e108302", "410e188603", "420e208c04", "420e288d05", "420e308e06", "420e388f07"])
# Each pop: advance, lower the CFA, restore the register (0xc0|reg).
POSTAMBLE_CFI = ["0e30cf", "420e28ce", "420e20cd", "420e18cc", "410e10c6", "410e08c3"]


def test_oneDNN_preamble_and_postamble() -> None:
    code = assemble(*PREAMBLE, "mov rax, qword ptr [rsp + 8]", "add rax, rbx", *POSTAMBLE, "ret")
    result = cfi.analyse(code)
    assert result.status == "ok"
    # The pushes end at 0x0a, the body takes 5 + 3 bytes, so the first pop ends 0x0a later (0x4a).
    assert result.program.hex() == PREAMBLE_CFI + "4a" + "".join(POSTAMBLE_CFI)


def test_sub_rsp_moves_the_cfa() -> None:
    code = assemble("push rbx", "sub rsp, 0x100", "mov rax, qword ptr [rsp + 8]", "add rsp, 0x100", "pop rbx", "ret")
    result = cfi.analyse(code)
    assert result.status == "ok"
    # push rbx -> rsp+16, rbx at cfa-16; sub -> rsp+0x110 (uleb 90 02); add -> 16; pop -> 8 + restore.
    assert result.program.hex() == "".join(["410e108302", "470e9002", "4c0e10", "410e08c3"])


def test_realigned_stack_gives_the_notes_test_vector() -> None:
    body = ("mov rax, qword ptr [rsp + 8]", "xor ebp, ebp", "mov ebp, 0x400", "vzeroupper")
    code = assemble(
        *PREAMBLE,
        "mov rbp, rsp",
        "sub rsp, rax",
        "and rsp, 0xfffffffffffff000",
        "mov qword ptr [rsp + 0x78], rbp",
        *body,
        "mov rsp, qword ptr [rsp + 0x78]",
        *POSTAMBLE,
        "ret",
    )
    program = cfi.analyse(code).program
    assert program is not None
    # The notes' vector: CFA = rbp+56 (0c 06 38) after `sub rsp, rax` (ends 0x10), CFA = *(rsp+0x78)+56
    # (0f 06 77 f8 00 06 23 38) after the save (ends 0x1c), CFA = rsp+56 (0c 07 38) after the reload
    # (ends 0x30), then the postamble's pops.
    realigned = ["46", "0c0638", "4c", "0f0677f800062338", "54", "0c0738", "42"]
    assert program.hex() == PREAMBLE_CFI + "".join(realigned + POSTAMBLE_CFI)
    rows = decoded_rows(code, program)  # and pyelftools reads the same rules back
    assert rows[0x0F]["cfa"] == ("rsp", 56)
    assert rows[0x10]["cfa"] == ("rbp", 56)
    assert rows[0x1C]["cfa"] == ("expr", bytes.fromhex("77f800062338"))
    assert rows[0x30]["cfa"] == ("rsp", 56)
    assert rows[len(code) - 1]["cfa"] == ("rsp", 8)


def test_workspace_switch_under_a_known_frame_pointer() -> None:
    """xbyak_gemm for large N: `mov rsp, [rsp+0x68]` while rbp still marks the frame."""
    code = assemble(
        *PREAMBLE,
        "mov rbp, rsp",
        "mov rsp, qword ptr [rsp + 0x68]",
        "mov qword ptr [rsp + 0x78], rbp",
        "mov rsp, qword ptr [rsp + 0x78]",
        *POSTAMBLE,
        "ret",
    )
    assert cfi.analyse(code).status == "ok"


REALIGNED = (*PREAMBLE, "mov rbp, rsp", "sub rsp, rax", "mov qword ptr [rsp + 0x78], rbp")


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        (("push rbx", "sub rsp, rax", "pop rbx", "ret"), "untracked rsp write"),
        (("mov rsp, qword ptr [rsp + 0x68]", "ret"), "untracked rsp write"),
        ((*PREAMBLE, "mov rbp, rsp", "sub rsp, rax", "xor ebp, ebp", "ret"), "rbp clobbered"),
        (("mov rbx, rax", "ret"), "callee-saved rbx modified"),
        (("cpuid", "ret"), "callee-saved rbx modified"),
        (("pop rax", "ret"), "pop below the return address"),
        (("push rbx", "ret"), "frame not unwound"),
        (("push rbx", "nop"), "no ret"),
        ((*REALIGNED, "push rax", "ret"), "rsp moved"),
        ((*REALIGNED, "mov qword ptr [rsp + 0x78], rax", "ret"), "overwritten"),
        ((*REALIGNED, "vmovups zmmword ptr [rsp + 0x40], zmm0", "ret"), "overwritten"),
        (("leave", "ret"), "leave without a known frame pointer"),
    ],
)
def test_unknown_shapes_get_no_cfi(lines: tuple[str, ...], why: str) -> None:
    result = cfi.analyse(assemble(*lines))
    assert result.program is None
    assert why in result.status


def jump(op: str, target: int, at: int) -> bytes:
    """A rel8 jmp (eb) or jg (7f) at `at` to `target`."""
    return bytes([0xEB if op == "jmp" else 0x7F, (target - (at + 2)) & 0xFF])


def test_a_branch_must_arrive_with_the_layout_its_target_expects() -> None:
    # jg over `sub rsp, 8` straight to the pop: at the pop the sweep expects rsp+24, the jump brings rsp+16.
    head = assemble("push rbx")
    skip_at = len(head)
    body = assemble("sub rsp, 8", "add rsp, 8")
    pop_at = skip_at + 2 + len(body) - 4  # lands on `add rsp, 8`
    code = head + jump("jg", pop_at, skip_at) + body + assemble("pop rbx", "ret")
    result = cfi.analyse(code)
    assert result.program is None and "another frame layout" in result.status
    # The same jump to the pop itself (after the add) is fine.
    fine = head + jump("jg", skip_at + 2 + len(body), skip_at) + body + assemble("pop rbx", "ret")
    assert cfi.analyse(fine).status == "ok"


def test_the_gemm_shape_jumping_into_the_realigned_frame_is_accepted() -> None:
    """xbyak_gemm: `jg` from before the realignment to the workspace path, whose rule is rbp-based."""
    pre = assemble(*PREAMBLE, "mov rbp, rsp")
    jg_at = len(pre)
    realign = assemble("sub rsp, rax", "and rsp, 0xfffffffffffff000")
    jmp_at = jg_at + 2 + len(realign)
    workspace = assemble("mov rsp, qword ptr [rsp + 0x68]")
    join = jmp_at + 2 + len(workspace)
    tail = assemble("mov qword ptr [rsp + 0x78], rbp", "mov rsp, qword ptr [rsp + 0x78]", *POSTAMBLE, "ret")
    code = pre + jump("jg", jmp_at + 2, jg_at) + realign + jump("jmp", join, jmp_at) + workspace + tail
    assert cfi.analyse(code).status == "ok"


def test_code_after_ret_reached_by_a_branch_gets_no_cfi() -> None:
    code = jump("jg", 3, 0) + assemble("ret", "nop", "ret")
    assert "leaves the analysed code" in cfi.analyse(code).status


def test_a_call_into_the_kernel_gets_no_cfi() -> None:
    code = bytes.fromhex("e800000000") + assemble("ret")  # call the next instruction
    assert "call into the kernel" in cfi.analyse(code).status


def test_parallel_analysis_matches_sequential() -> None:
    codes = [assemble(*PREAMBLE, *POSTAMBLE, "ret") * 1, assemble("push rbx", "ret")] * 3
    assert cfi.analyse_all(codes, jobs=2) == cfi.analyse_all(codes, jobs=1)


def decoded_rows(code: bytes, program: bytes) -> list[dict[str, object]]:
    """The CFA rule at every code offset, decoded by pyelftools from our .eh_frame bytes."""
    unwind = build_unwind(len(code), program)
    eh_frame = unwind.data[: len(unwind.data) - unwind.eh_frame_hdr_size]
    structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8)
    info = CallFrameInfo(io.BytesIO(eh_frame), len(eh_frame), align(len(code), 8), structs, for_eh_frame=True)
    fdes = [e for e in info.get_entries() if type(e).__name__ == "FDE"]
    assert len(fdes) == 1
    assert fdes[0].header["initial_location"] == 0 and fdes[0].header["address_range"] == len(code)
    table = fdes[0].get_decoded().table
    rows: list[dict[str, object]] = []
    for pc in range(len(code)):
        row = [r for r in table if r["pc"] <= pc][-1]
        rule = row["cfa"]
        cfa = ("expr", bytes(rule.expr)) if rule.expr is not None else ({7: "rsp", 6: "rbp"}[rule.reg], rule.offset)
        rows.append({"cfa": cfa, "row": row})
    return rows


def test_pyelftools_reads_the_saved_registers_where_the_pushes_put_them() -> None:
    code = assemble(*PREAMBLE, "nop", *POSTAMBLE, "ret")
    program = cfi.analyse(code).program
    assert program is not None
    rows = decoded_rows(code, program)
    body = rows[10]  # the nop: all six registers saved
    assert body["cfa"] == ("rsp", 56)
    saved = {reg: rule.arg for reg, rule in body["row"].items() if isinstance(reg, int) and rule.type == "OFFSET"}
    assert saved == {3: -16, 6: -24, 12: -32, 13: -40, 14: -48, 15: -56, 16: -8}
    assert rows[len(code) - 1]["cfa"] == ("rsp", 8)


def test_written_registers_agree_with_capstones_detail_mode() -> None:
    """The text-level write detection against capstone's own (slower) register-access analysis."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    family = {**cfi.CANONICAL}
    extra = bytes.fromhex(
        "4887dd"  # xchg rbp, rbx
        "480fc1c3"  # xadd rbx, rax
        "c4e2fbf6d8"  # mulx rbx, rax, rax
        "4c8d2424"  # lea r12, [rsp]
        "4c89e0"  # mov rax, r12 (reads only)
        "4839dd"  # cmp rbp, rbx (reads only)
    )
    code = b"".join(bytes.fromhex(h) for h in ASM.values()) + extra
    for insn in md.disasm(code, 0):
        _, writes = insn.regs_access()
        real = {family[insn.reg_name(r)] for r in writes if insn.reg_name(r) in family} - {"rsp"}
        ours = cfi.written(insn.mnemonic, insn.op_str.split(", ") if insn.op_str else []) - {"rsp"}
        if insn.mnemonic == "pop":
            ours |= {family.get(insn.op_str)} & {"rbp", "rbx", "r12", "r13", "r14", "r15"}
        if insn.mnemonic == "leave":
            ours |= {"rbp"}
        assert real <= ours, (insn.mnemonic, insn.op_str, real, ours)
