/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frames named: the mapping, the module's symbol, Perfetto's rel_pc and load bias, with
 * a cache of named addresses per process over libdw's lookups. */
#include <string.h>

#include "perf-unwind-local.h"

/* Perfetto's load_bias: p_vaddr - p_offset of the first executable PT_LOAD. */
static uint64_t elf_load_bias(Elf *elf) {
        size_t n;

        if (elf_getphdrnum(elf, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
                        return ph.p_vaddr - ph.p_offset;
        }
        return 0;
}

/* Copies the module's build id and load bias to its mappings, once it has an ELF. */
static void describe_module(Dwfl_Module *mod, PerfModule *m, Elf *elf) {
        const unsigned char *bits = NULL;
        GElf_Addr vaddr;
        int len;

        if (m->described)
                return;
        m->described = true;
        len = dwfl_module_build_id(mod, &bits, &vaddr);
        uint64_t bias = elf_load_bias(elf);
        for (size_t i = m->first; i < m->first + m->n; i++) {
                PerfMapping *pm = &m->process->maps[i];
                pm->load_bias = bias;
                if (len > 0) {
                        pm->build_id = bits;
                        pm->build_id_len = len;
                }
        }
}

static const PerfMapping *find_mapping(const PerfProcess *p, uint64_t pc) {
        size_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (pc < p->maps[mid].start)
                        hi = mid;
                else if (pc >= p->maps[mid].end)
                        lo = mid + 1;
                else
                        return &p->maps[mid];
        }
        return NULL;
}

static PerfNameCopy *copy_slot(PerfNameCopy *table, size_t cap, const char *source) {
        size_t i = ((uintptr_t) source * 0x9e3779b97f4a7c15ull) >> 32;

        for (;; i++)
                if (!table[i & (cap - 1)].source || table[i & (cap - 1)].source == source)
                        return &table[i & (cap - 1)];
}

static int grow_copies(PerfProcess *p) {
        size_t cap = MAX(p->cap_copies * 2, 64u);
        PerfNameCopy *table;

        if (!perf_process_charge(p, (cap - p->cap_copies) * sizeof(PerfNameCopy)))
                return -ENOBUFS;
        table = calloc(cap, sizeof(*table));
        if (!table) {
                perf_process_uncharge(p, (cap - p->cap_copies) * sizeof(PerfNameCopy));
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->cap_copies; i++)
                if (p->copies[i].source)
                        *copy_slot(table, cap, p->copies[i].source) = p->copies[i];
        free(p->copies);
        p->copies = table;
        p->cap_copies = cap;
        return 0;
}

/* libdw names a versioned .dynsym entry "clock_gettime@@GLIBC_2.17": a trace names the
 * function. Over the memory cap, the versioned name stays. */
static const char *plain_name(PerfProcess *p, const char *name) {
        const char *at = name ? strchr(name, '@') : NULL;
        PerfNameCopy *slot;

        if (!at || at == name)
                return name;
        if ((p->n_copies + 1) * 2 > p->cap_copies && grow_copies(p) < 0)
                return name;
        slot = copy_slot(p->copies, p->cap_copies, name);
        if (slot->source)
                return slot->copy;
        if (!perf_process_charge(p, at - name + 1))
                return name;
        slot->copy = strndup(name, at - name);
        if (!slot->copy) {
                perf_process_uncharge(p, at - name + 1);
                return name;
        }
        slot->source = name;
        p->n_copies++;
        return slot->copy;
}

/* Names @lookup without the cache; ret->rel_base makes the rel_pc of any pc named there. */
static void name_uncached(PerfProcess *p, uint64_t lookup, PerfNameSlot *ret) {
        Dwfl_Module *mod;
        Dwarf_Addr bias;
        Elf *elf;

        *ret = (PerfNameSlot) { .lookup = lookup, .mapping = find_mapping(p, lookup) };
        if (!ret->mapping)
                return;
        ret->rel_base = ret->mapping->start - ret->mapping->pgoff;
        mod = p->dwfl ? dwfl_addrmodule(p->dwfl, lookup) : NULL;
        if (!mod)
                return;
        /* A module's ELF may reach past its files' mappings (a .bss): not its code. */
        void **userdata;
        dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
        PerfModule *m = *userdata;
        size_t index = ret->mapping - p->maps;
        if (!m || index < m->first || index >= m->first + m->n)
                return;
        elf = dwfl_module_getelf(mod, &bias);
        if (!elf)
                return;
        GElf_Off offset;
        GElf_Sym sym;
        describe_module(mod, m, elf);
        ret->rel_base = bias;
        ret->function = plain_name(p, dwfl_module_addrinfo(mod, lookup, &offset, &sym, NULL, NULL, NULL));
}

void perf_process_name_frame(PerfProcess *p, uint64_t pc, uint64_t lookup, PerfFrame *f) {
        const size_t size = (size_t) 1 << PERF_NAME_CACHE_BITS;
        PerfNameSlot *slot, fresh;

        /* The cache is charged to the cap like the files; without room, no cache. */
        if (!p->names && perf_process_charge(p, size * sizeof(PerfNameSlot))) {
                p->names = calloc(size, sizeof(PerfNameSlot));
                if (!p->names)
                        perf_process_uncharge(p, size * sizeof(PerfNameSlot));
        }
        slot = p->names ? &p->names[(lookup * 0x9e3779b97f4a7c15ull) >> (64 - PERF_NAME_CACHE_BITS)] : &fresh;
        /* An empty slot holds lookup 0, which names nothing: it is computed every time. */
        if (!p->names || slot->lookup != lookup || lookup == 0)
                name_uncached(p, lookup, slot);
        *f = (PerfFrame) {
                .pc = pc,
                .rel_pc = pc - slot->rel_base,
                .function = slot->function,
                .mapping = slot->mapping,
        };
}

int perf_symbolize(PerfProcess *p, uint64_t pc, bool return_address, PerfFrame *ret) {
        perf_process_name_frame(p, pc, return_address && pc > 0 ? pc - 1 : pc, ret);
        return 0;
}

/* For the unwinder's reads outside the stack copy: the module's file bytes at @addr. */
bool perf_process_read_file_word(PerfProcess *p, uint64_t addr, uint64_t *ret) {
        Dwfl_Module *mod = p->dwfl ? dwfl_addrmodule(p->dwfl, addr) : NULL;
        Dwarf_Addr bias;
        Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
        size_t n, size;
        const char *raw;

        if (!elf || elf_getphdrnum(elf, &n) < 0 || !(raw = elf_rawfile(elf, &size)))
                return false;
        uint64_t vaddr = addr - bias;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (vaddr < ph.p_vaddr || vaddr + 8 > ph.p_vaddr + ph.p_filesz)
                        continue;
                uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
                if (off + 8 > size)
                        return false;
                memcpy(ret, raw + off, 8);
                return true;
        }
        return false;
}
