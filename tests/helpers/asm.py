"""x86-64 encodings written as assembly, for the JIT CFI tests (test_jit_cfi checks them with capstone)."""

from __future__ import annotations

# x86-64 encodings, each checked against capstone's rendering (so the tests read as assembly).
ASM = {
    "push rbx": "53",
    "push rbp": "55",
    "push r12": "4154",
    "push r13": "4155",
    "push r14": "4156",
    "push r15": "4157",
    "pop r15": "415f",
    "pop r14": "415e",
    "pop r13": "415d",
    "pop r12": "415c",
    "pop rbp": "5d",
    "pop rbx": "5b",
    "mov rbp, rsp": "4889e5",
    "mov rsp, rbp": "4889ec",
    "sub rsp, rax": "4829c4",
    "and rsp, 0xfffffffffffff000": "4881e400f0ffff",
    "mov qword ptr [rsp + 0x78], rbp": "48896c2478",
    "mov rsp, qword ptr [rsp + 0x78]": "488b642478",
    "mov rsp, qword ptr [rsp + 0x68]": "488b642468",
    "sub rsp, 0x100": "4881ec00010000",
    "add rsp, 0x100": "4881c400010000",
    "sub rsp, 8": "4883ec08",
    "add rsp, 8": "4883c408",
    "lea rsp, [rsp + 0x10]": "488d642410",
    "mov rax, qword ptr [rsp + 8]": "488b442408",
    "mov qword ptr [rsp + 0x78], rax": "4889442478",
    "vmovups zmmword ptr [rsp + 0x40], zmm0": "62f17c4811442401",
    "xor ebp, ebp": "31ed",
    "mov ebp, 0x400": "bd00040000",
    "mov rbx, rax": "4889c3",
    "add rax, rbx": "4801d8",
    "vzeroupper": "c5f877",
    "nop": "90",
    "leave": "c9",
    "ret": "c3",
    "push rax": "50",
    "pop rax": "58",
    "cpuid": "0fa2",
}


def assemble(*lines: str) -> bytes:
    """Concatenate the encodings; jumps are written as ('jmp'|'jg', target label) pairs elsewhere."""
    return b"".join(bytes.fromhex(ASM[line]) for line in lines)

PREAMBLE = ("push rbx", "push rbp", "push r12", "push r13", "push r14", "push r15")
POSTAMBLE = ("pop r15", "pop r14", "pop r13", "pop r12", "pop rbp", "pop rbx")
