// A small classic-BPF interpreter over struct seccomp_data, so a test can ask
// the exported filter what it answers for any call, argument and architecture,
// without installing it. It covers the instructions seccomp accepts; anything
// else is reported as unsupported rather than guessed.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace chock::test {

struct BpfVerdict {
  std::optional<std::uint32_t> action;  // the RET value; empty when the program is malformed
  const char* problem = nullptr;
  std::size_t steps = 0;  // instructions executed, the filter's path length for this call
};

inline BpfVerdict run_bpf(const std::vector<sock_filter>& program, const seccomp_data& data) {
  std::uint32_t a = 0;
  std::uint32_t x = 0;
  std::uint32_t mem[BPF_MEMWORDS] = {};
  auto load = [&data](std::uint32_t offset, std::uint32_t* out) {
    if (offset % 4 != 0 || offset + 4 > sizeof data) return false;
    std::memcpy(out, reinterpret_cast<const char*>(&data) + offset, 4);
    return true;
  };
  std::size_t steps = 0;
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& in = program[pc];
    ++steps;
    const std::uint32_t src = BPF_SRC(in.code) == BPF_X ? x : in.k;
    switch (BPF_CLASS(in.code)) {
      case BPF_LD:
        if (in.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (!load(in.k, &a)) return {std::nullopt, "load out of seccomp_data"};
        } else if (in.code == (BPF_LD | BPF_IMM)) {
          a = in.k;
        } else if (in.code == (BPF_LD | BPF_MEM)) {
          if (in.k >= BPF_MEMWORDS) return {std::nullopt, "bad scratch slot"};
          a = mem[in.k];
        } else if (in.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof data;
        } else {
          return {std::nullopt, "unsupported load"};
        }
        break;
      case BPF_LDX:
        if (in.code == (BPF_LDX | BPF_IMM)) {
          x = in.k;
        } else if (in.code == (BPF_LDX | BPF_MEM) && in.k < BPF_MEMWORDS) {
          x = mem[in.k];
        } else {
          return {std::nullopt, "unsupported ldx"};
        }
        break;
      case BPF_ST:
      case BPF_STX:
        if (in.k >= BPF_MEMWORDS) return {std::nullopt, "bad scratch slot"};
        mem[in.k] = BPF_CLASS(in.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(in.code)) {
          case BPF_ADD:
            a += src;
            break;
          case BPF_SUB:
            a -= src;
            break;
          case BPF_MUL:
            a *= src;
            break;
          case BPF_DIV:
            if (src == 0) return {std::nullopt, "division by zero"};
            a /= src;
            break;
          case BPF_AND:
            a &= src;
            break;
          case BPF_OR:
            a |= src;
            break;
          case BPF_XOR:
            a ^= src;
            break;
          case BPF_LSH:
            a = src < 32 ? a << src : 0;
            break;
          case BPF_RSH:
            a = src < 32 ? a >> src : 0;
            break;
          case BPF_NEG:
            a = 0U - a;
            break;
          default:
            return {std::nullopt, "unsupported alu"};
        }
        break;
      case BPF_JMP: {
        if (BPF_OP(in.code) == BPF_JA) {
          pc += in.k;
          break;
        }
        bool taken = false;
        switch (BPF_OP(in.code)) {
          case BPF_JEQ:
            taken = a == src;
            break;
          case BPF_JGT:
            taken = a > src;
            break;
          case BPF_JGE:
            taken = a >= src;
            break;
          case BPF_JSET:
            taken = (a & src) != 0;
            break;
          default:
            return {std::nullopt, "unsupported jump"};
        }
        pc += taken ? in.jt : in.jf;
        break;
      }
      case BPF_RET:
        if (BPF_RVAL(in.code) == BPF_K) return {in.k, nullptr, steps};
        if (BPF_RVAL(in.code) == BPF_A) return {a, nullptr, steps};
        return {std::nullopt, "unsupported ret"};
      case BPF_MISC:
        if (BPF_MISCOP(in.code) == BPF_TAX) {
          x = a;
        } else if (BPF_MISCOP(in.code) == BPF_TXA) {
          a = x;
        } else {
          return {std::nullopt, "unsupported misc"};
        }
        break;
      default:
        return {std::nullopt, "unknown instruction class"};
    }
  }
  return {std::nullopt, "ran off the end of the program"};
}

}  // namespace chock::test
