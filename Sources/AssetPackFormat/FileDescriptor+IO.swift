import SystemPackage

extension FileDescriptor {
    /// Reads from the current offset to the end of the file (for small files such as manifests).
    func readAll() throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try self.read(into: $0, retryOnInterrupt: true) }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

    /// Reads the file in chunks of up to 1 MiB from byte 0, handing each to `body` (valid during the call
    /// only), up to `length` bytes or the end of the file: the one read loop behind hashing and copying.
    /// - Returns: The bytes read.
    /// - Throws: `Errno` from `pread`, or what `body` throws.
    @discardableResult
    public func forEachChunk(upTo length: Int64 = .max, _ body: (UnsafeRawBufferPointer) throws -> Void) throws
        -> Int64
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let count = try read(
                fromAbsoluteOffset: offset,
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]),
                retryOnInterrupt: true
            )
            if count == 0 { break }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return offset
    }
}
