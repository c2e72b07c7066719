import CLibArchive
import Foundation
import SystemPackage

/// Writes hand-made tar archives (hostile ones included) and lists entries, straight through libarchive.
public enum ArchiveFixture {
    public enum Kind {
        case file(Data)
        case symlink(String)
        case hardlink(String)
        case fifo
        case device
        case directory
    }

    public struct Entry {
        public var name: String
        public var kind: Kind
        /// A size to declare instead of the data's.
        public var declaredSize: Int64?

        public init(_ name: String, _ kind: Kind, declaredSize: Int64? = nil) {
            self.name = name
            self.kind = kind
            self.declaredSize = declaredSize
        }
    }

    public static func write(_ entries: [Entry], to path: FilePath, zstd: Bool = true) throws {
        // Names are UTF-8: libarchive converts them through the thread's locale.
        let locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)
        let previous = uselocale(locale)
        defer {
            uselocale(previous)
            freelocale(locale)
        }
        let archive = archive_write_new()!
        defer { archive_write_free(archive) }
        archive_write_set_format_pax_restricted(archive)
        archive_write_set_format_option(archive, "pax", "hdrcharset", "BINARY")  // names as given, byte-exact
        if zstd { archive_write_add_filter_zstd(archive) }
        guard archive_write_open_filename(archive, path.string) == 0 else { throw Errno.ioError }
        for item in entries {
            let entry = archive_entry_new()!
            defer { archive_entry_free(entry) }
            archive_entry_copy_pathname(entry, item.name)
            archive_entry_set_perm(entry, 0o644)
            var data = Data()
            switch item.kind {
            case .file(let bytes):
                archive_entry_set_filetype(entry, 0o100000)
                data = bytes
                archive_entry_set_size(entry, item.declaredSize ?? Int64(bytes.count))
            case .symlink(let target):
                archive_entry_set_filetype(entry, 0o120000)
                archive_entry_set_symlink(entry, target)
            case .hardlink(let target):
                archive_entry_set_filetype(entry, 0o100000)
                archive_entry_set_hardlink(entry, target)
            case .fifo:
                archive_entry_set_filetype(entry, 0o010000)
            case .device:
                archive_entry_set_filetype(entry, 0o020000)
                archive_entry_set_rdev(entry, 0x0103)
            case .directory:
                archive_entry_set_filetype(entry, 0o040000)
                archive_entry_set_perm(entry, 0o755)
            }
            guard archive_write_header(archive, entry) == 0 else { throw Errno.ioError }
            if !data.isEmpty {
                _ = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
            }
        }
        archive_write_close(archive)
    }

    public static func entryNames(_ path: FilePath) throws -> [String] {
        let locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)
        let previous = uselocale(locale)
        defer {
            uselocale(previous)
            freelocale(locale)
        }
        let archive = archive_read_new()!
        defer { archive_read_free(archive) }
        archive_read_support_filter_all(archive)
        archive_read_support_format_all(archive)
        guard archive_read_open_filename(archive, path.string, 65536) == 0 else { throw Errno.ioError }
        var names: [String] = []
        var entry: OpaquePointer?
        while archive_read_next_header(archive, &entry) == 0 {
            names.append(String(cString: archive_entry_pathname(entry)))
            archive_read_data_skip(archive)
        }
        return names
    }

    /// `data` as libarchive's own zstd filter compresses it at `level` (its raw format: the bytes as they are,
    /// no padding): the reference for a tar that ba-mock compresses on a thread of its own.
    public static func libarchiveZstd(_ data: Data, level: Int) throws -> Data {
        let archive = archive_write_new()!
        defer { archive_write_free(archive) }
        guard archive_write_set_format_raw(archive) == 0, archive_write_add_filter_zstd(archive) == 0,
            archive_write_set_filter_option(archive, "zstd", "compression-level", String(level)) == 0,
            archive_write_set_bytes_in_last_block(archive, 1) == 0
        else { throw Errno.invalidArgument }
        // libarchive keeps both pointers until it is closed.
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count + 65536, alignment: 16)
        let used = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        defer {
            output.deallocate()
            used.deallocate()
        }
        used.pointee = 0
        guard archive_write_open_memory(archive, output.baseAddress, output.count, used) == 0 else {
            throw Errno.ioError
        }
        let entry = archive_entry_new()!
        defer { archive_entry_free(entry) }
        archive_entry_set_filetype(entry, 0o100000)
        archive_entry_set_size(entry, Int64(data.count))
        guard archive_write_header(archive, entry) == 0 else { throw Errno.ioError }
        let wrote = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
        guard wrote == data.count, archive_write_close(archive) == 0 else { throw Errno.ioError }
        return Data(UnsafeRawBufferPointer(rebasing: output[..<used.pointee]))
    }

    /// A plain (uncompressed) tar written byte by byte, for headers libarchive would refuse to write: each
    /// entry is a pax extended header with `records`, then a ustar header, then its data.
    public static func rawTar(_ entries: [(name: String, records: [String: String], data: Data)]) -> Data {
        var out = Data()
        for entry in entries {
            if !entry.records.isEmpty {
                var body = Data()
                for (key, value) in entry.records.sorted(by: { $0.key < $1.key }) {
                    let text = " \(key)=\(value)\n"
                    var length = text.utf8.count + 1
                    while String(length).utf8.count + text.utf8.count != length { length += 1 }
                    body += Data((String(length) + text).utf8)
                }
                out += ustarHeader(name: "PaxHeader/x", size: body.count, type: "x") + padded(body)
            }
            out += ustarHeader(name: entry.name, size: entry.data.count, type: "0") + padded(entry.data)
        }
        return out + Data(count: 1024)
    }

    private static func padded(_ data: Data) -> Data {
        data + Data(count: (512 - data.count % 512) % 512)
    }

    private static func ustarHeader(name: String, size: Int, type: Character) -> Data {
        var block = [UInt8](repeating: 0, count: 512)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { block[offset + index] = byte }
        }
        for (index, byte) in name.utf8.prefix(99).enumerated() { block[index] = byte }
        put("0000644", at: 100)
        put("0000000", at: 108)
        put("0000000", at: 116)
        put(String(format: "%011o", size), at: 124)
        put("00000000000", at: 136)
        put(String(type), at: 156)
        put("ustar", at: 257)
        put("00", at: 263)
        put("        ", at: 148)
        let sum = block.reduce(0) { $0 + Int($1) }
        put(String(format: "%06o", sum) + "\0 ", at: 148)
        return Data(block)
    }

    /// The JSON of a valid index for the given files.
    public static func index(_ files: [(String, Data)], id: String = "Hostile") -> Data {
        let rows = files.map { name, data in
            #"{"path":"\#(name)","size":\#(data.count),"sha256":"\#(sha256Hex(data))"}"#
        }
        let size = files.reduce(0) { $0 + $1.1.count }
        return Data(
            #"{"formatVersion":1,"assetPackID":"\#(id)","downloadPolicy":{"onDemand":{}},"platforms":["iOS"],"installSize":\#(size),"fileCount":\#(files.count),"files":[\#(rows.joined(separator: ","))]}"#
                .utf8
        )
    }

    public static func sha256Hex(_ data: Data) -> String {
        // Through the library under test would be circular for digest checks; use the sha256sum binary.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID().uuidString)")
        try? data.write(to: scratch)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [scratch.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return String(output.prefix(64))
    }
}
