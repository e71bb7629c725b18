/* trace_symbolize_dw.c — the libdw side of the symbolizer: an ELF module
 * reported to its own Dwfl session at the recorded load bias, and the
 * inline chain at an address (see trace_symbolize_dw.h).
 *
 * The chain comes from the DIEs that contain the address in the concrete
 * tree, innermost first (dwarf_getscopes, then dwarf_getscopes_die). Each DW_TAG_inlined_subroutine
 * is one level, and the first DW_TAG_subprogram the real function. The innermost level's line is
 * the line table's; every outer level's line is the call site (DW_AT_call_
 * file/line) of the level inside it, which is where the inlined body was
 * pasted. C++ names are demangled with libstdc++'s __cxa_demangle when that
 * library is on the system (found with dlopen, so C programs do not link
 * it); otherwise the plain DW_AT_name is used. */
#include "trace_symbolize_dw.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dw_module {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    char *demangled[TRACE_SYMBOL_MAX_INLINE]; /* names owned until the next lookup */
    unsigned demangled_len;
};

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo, /* also /usr/lib/debug/.build-id */
    .section_address = dwfl_offline_section_address,
};

/* ---- demangling ------------------------------------------------------------ */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* Looked up once; the symbolizer runs on one thread. */
static cxa_demangle_fn find_demangler(void) {
    static int looked;
    static cxa_demangle_fn fn;
    if (!looked) {
        looked = 1;
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (lib)
            *(void **)&fn = dlsym(lib, "__cxa_demangle");
    }
    return fn;
}

static const char *demangle(dw_module *m, const char *mangled) {
    if (strncmp(mangled, "_Z", 2) != 0 || m->demangled_len == TRACE_SYMBOL_MAX_INLINE)
        return NULL;
    cxa_demangle_fn fn = find_demangler();
    if (!fn)
        return NULL;
    int status = -1;
    char *plain = fn(mangled, NULL, NULL, &status);
    if (status != 0 || !plain) {
        free(plain);
        return NULL;
    }
    m->demangled[m->demangled_len++] = plain;
    return plain;
}

static void forget_names(dw_module *m) {
    for (unsigned i = 0; i < m->demangled_len; i++)
        free(m->demangled[i]);
    m->demangled_len = 0;
}

/* A function's name: the demangled linkage name (C++ qualifies it), else
 * DW_AT_name; both looked up through abstract origins (inlined copies). */
static const char *function_name(dw_module *m, Dwarf_Die *die) {
    Dwarf_Attribute attr;
    const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!linkage)
        linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    const char *plain = linkage ? demangle(m, linkage) : NULL;
    if (plain)
        return plain;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    return name ? name : linkage;
}

/* ---- opening ------------------------------------------------------------- */

/* The ELF file type (ET_EXEC, ET_DYN) of an open file, or -1. */
static int elf_type(int fd) {
    unsigned char ident[EI_NIDENT + 2];
    if (pread(fd, ident, sizeof ident, 0) != (ssize_t)sizeof ident ||
        memcmp(ident, ELFMAG, SELFMAG) != 0)
        return -1;
    return ident[EI_DATA] == ELFDATA2MSB ? ident[EI_NIDENT] << 8 | ident[EI_NIDENT + 1]
                                         : ident[EI_NIDENT + 1] << 8 | ident[EI_NIDENT];
}

/* The recorded id is the note's descriptor, or the whole note (16-byte
 * header + "GNU\0" + descriptor); either way its last bytes are the id. */
static int build_id_matches(const uint8_t *recorded, uint32_t recorded_len,
                            const unsigned char *file_id, int file_len) {
    if (file_len <= 0)
        return 0;
    uint32_t n = (uint32_t)file_len;
    if (recorded_len != n && recorded_len != n + 16)
        return 0;
    return memcmp(recorded + (recorded_len - n), file_id, n) == 0;
}

static void hex(char *out, size_t outlen, const uint8_t *b, size_t n) {
    size_t i = 0;
    for (; i < n && 2 * i + 2 < outlen; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    out[2 * i] = 0;
}

dw_module *dw_module_open(const char *path, uint64_t bias, const uint8_t *build_id,
                          uint32_t build_id_len, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "module %s is %s", path,
                 errno == ENOENT ? "not on disk" : "unreadable");
        return NULL;
    }
    int type = elf_type(fd);
    if (type != ET_EXEC && type != ET_DYN) {
        close(fd);
        snprintf(why, whylen, "module %s is not an ELF executable or shared library", path);
        return NULL;
    }
    dw_module *m = calloc(1, sizeof *m);
    if (m)
        m->dwfl = dwfl_begin(&offline_callbacks);
    if (!m || !m->dwfl) {
        close(fd);
        free(m);
        snprintf(why, whylen, "module %s: out of memory", path);
        return NULL;
    }
    /* An ET_EXEC file sits at its link addresses: its bias is 0 whatever
     * the recorder saw as a base. dwfl takes ownership of fd on success. */
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_elf(m->dwfl, path, path, fd, type == ET_EXEC ? 0 : bias, true);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod) {
        snprintf(why, whylen, "module %s: %s", path, dwfl_errmsg(-1));
        close(fd);
        dw_module_close(m);
        return NULL;
    }
    if (build_id_len) {
        const unsigned char *file_id = NULL;
        GElf_Addr note_vaddr;
        int file_len = dwfl_module_build_id(m->mod, &file_id, &note_vaddr);
        if (!build_id_matches(build_id, build_id_len, file_id, file_len)) {
            char want[2 * 64 + 1], have[2 * 64 + 1];
            hex(want, sizeof want, build_id, build_id_len);
            hex(have, sizeof have, file_id, file_len > 0 ? (size_t)file_len : 0);
            snprintf(why, whylen,
                     "module %s on disk is not the one recorded (build-id %s, recorded %s)", path,
                     have[0] ? have : "none", want);
            dw_module_close(m);
            return NULL;
        }
    }
    return m;
}

void dw_module_close(dw_module *m) {
    if (!m)
        return;
    forget_names(m);
    if (m->dwfl)
        dwfl_end(m->dwfl);
    free(m);
}

/* ---- lookups ------------------------------------------------------------- */

static int is_function(Dwarf_Die *die) {
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The compile unit holding addr. dwfl's lookup goes through
 * .debug_aranges, which clang does not emit by default; without it, the
 * CUs' own ranges are searched one by one (slower, found all the same). */
static Dwarf_Die *find_cu(Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Addr *bias) {
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
    if (cu)
        return cu;
    Dwarf_Addr cu_bias = 0;
    for (cu = dwfl_module_nextcu(mod, NULL, &cu_bias); cu;
         cu = dwfl_module_nextcu(mod, cu, &cu_bias))
        if (dwarf_haspc(cu, addr - cu_bias) > 0) {
            *bias = cu_bias;
            return cu;
        }
    return NULL;
}

/* The inline chain from DWARF; leaves out->count 0 when the address has no
 * function DIE (no debug info, or code without it). */
static void from_dwarf(dw_module *m, uint64_t addr, dw_symbol *out) {
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *cu = find_cu(m->mod, addr, &cu_bias);
    Dwarf_Die *scopes = NULL;
    int nscopes = cu ? dwarf_getscopes(cu, addr - cu_bias, &scopes) : 0;
    if (nscopes > 0) {
        /* dwarf_getscopes continues from an inlined instance into its
         * abstract definition; the concrete nesting (who the code was
         * inlined into) comes from walking up from the innermost DIE. */
        Dwarf_Die innermost = scopes[0];
        free(scopes);
        scopes = NULL;
        nscopes = dwarf_getscopes_die(&innermost, &scopes);
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;

    Dwarf_Die *inner = NULL; /* the level inside the current one */
    for (int i = 0; i < nscopes && out->count < TRACE_SYMBOL_MAX_INLINE; i++) {
        Dwarf_Die *die = &scopes[i];
        if (!is_function(die))
            continue;
        dw_symbol_entry *e = &out->entries[out->count++];
        e->function = function_name(m, die);
        e->file = NULL;
        e->line = 0;
        if (!inner) {
            int line = 0;
            Dwarf_Line *l = dwarf_getsrc_die(cu, addr - cu_bias);
            e->file = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
            if (l && dwarf_lineno(l, &line) == 0 && line > 0)
                e->line = (uint32_t)line;
        } else {
            Dwarf_Attribute attr;
            Dwarf_Word file_index = 0, call_line = 0;
            if (files &&
                dwarf_formudata(dwarf_attr(inner, DW_AT_call_file, &attr), &file_index) == 0)
                e->file = dwarf_filesrc(files, file_index, NULL, NULL);
            if (dwarf_formudata(dwarf_attr(inner, DW_AT_call_line, &attr), &call_line) == 0)
                e->line = (uint32_t)call_line;
        }
        inner = die;
        if (dwarf_tag(die) == DW_TAG_subprogram)
            break; /* the function that really holds the address */
    }
    free(scopes);
}

int dw_module_symbolize(dw_module *m, uint64_t addr, dw_symbol *out) {
    forget_names(m);
    out->count = 0;
    from_dwarf(m, addr, out);
    if (out->count)
        return 0;
    /* No DWARF: the ELF symbol table names the function, nothing more. */
    GElf_Off offset;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(m->mod, addr, &offset, &sym, NULL, NULL, NULL);
    if (name) {
        const char *plain = demangle(m, name);
        out->entries[0] = (dw_symbol_entry){plain ? plain : name, NULL, 0};
        out->count = 1;
    }
    return 0;
}
