// Internal to the NFS program: one function per NFSv3 procedure, each in its
// own proc_*.cc file; nfs_program.cc holds the dispatch table.
//
// Each procedure decodes `args`, answers GARBAGE_ARGS if they do not decode,
// and otherwise invokes `respond` exactly once with its RFC 1813 result.
#pragma once

#include "nfs3/nfs_program.h"
#include "rpc/program.h"
#include "xdr/xdr.h"

namespace geofs::nfs3 {

using Procedure = void (*)(const NfsContext& nfs, const rpc::CallContext& ctx, xdr::Decoder& args,
                           rpc::Responder respond);

void ProcNull(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcGetattr(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcSetattr(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcLookup(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcAccess(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcReadlink(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcRead(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcWrite(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcCreate(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcMkdir(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcSymlink(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcMknod(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcRemove(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcRmdir(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcRename(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcLink(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcReaddir(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcReaddirplus(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcFsstat(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcFsinfo(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcPathconf(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);
void ProcCommit(const NfsContext&, const rpc::CallContext&, xdr::Decoder&, rpc::Responder);

}  // namespace geofs::nfs3
