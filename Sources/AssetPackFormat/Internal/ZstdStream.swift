import CZstd

/// One zstd frame written a piece at a time: a tar's compression, on ``ArchiveSink``'s thread of its own.
///
/// It makes the calls libarchive's zstd filter makes (a context at the level, the input streamed with no
/// size pledged, then the end of the frame), so the frame is byte for byte the one libarchive wrote inside
/// its own thread before: zstd's output does not depend on how its input is cut into calls. Used by one
/// thread at a time.
final class ZstdStream: @unchecked Sendable {
    private let context: OpaquePointer

    /// - Throws: `.invalidOption` for a level outside zstd's range (zstd would clamp it, where libarchive
    ///   refused it), `.archive` when it cannot start.
    init(level: Int) throws(AssetPackFormatError) {
        guard Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel()) ~= level else {
            throw AssetPackFormatError(
                code: .invalidOption,
                message: "zstd has no level \(level): use \(ZSTD_minCLevel()) to \(ZSTD_maxCLevel())"
            )
        }
        guard let context = ZSTD_createCCtx() else {
            throw AssetPackFormatError(code: .archive, message: "zstd could not allocate a compressor")
        }
        let set = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(clamping: level))
        guard ZSTD_isError(set) == 0 else {
            ZSTD_freeCCtx(context)
            throw AssetPackFormatError(
                code: .invalidOption,
                message: "zstd refused level \(level): \(String(cString: ZSTD_getErrorName(set)))"
            )
        }
        self.context = context
    }

    deinit { ZSTD_freeCCtx(context) }

    /// Compresses from `input` into `output` until one of them is used up (zstd keeps what it has not yet
    /// written out).
    /// - Returns: How many bytes it took from `input` and wrote to `output`.
    func compress(
        _ input: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(AssetPackFormatError) -> (read: Int, wrote: Int) {
        var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        let wrote = try run(&source, into: output, ZSTD_e_continue).wrote
        return (source.pos, wrote)
    }

    /// Ends the frame into `output`.
    /// - Returns: How many bytes it wrote, and whether the frame is complete (if not, call it again with room).
    func end(into output: UnsafeMutableRawBufferPointer) throws(AssetPackFormatError) -> (wrote: Int, done: Bool) {
        var nothing = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        let (wrote, left) = try run(&nothing, into: output, ZSTD_e_end)
        return (wrote, left == 0)
    }

    private func run(
        _ source: inout ZSTD_inBuffer,
        into output: UnsafeMutableRawBufferPointer,
        _ directive: ZSTD_EndDirective
    ) throws(AssetPackFormatError) -> (wrote: Int, left: Int) {
        var target = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
        let left = ZSTD_compressStream2(context, &target, &source, directive)
        guard ZSTD_isError(left) == 0 else {
            throw AssetPackFormatError(
                code: .archive,
                message: "zstd could not compress the pack: \(String(cString: ZSTD_getErrorName(left)))"
            )
        }
        return (target.pos, left)
    }
}
