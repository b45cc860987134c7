import OpenSwiftDataMerge

extension TextChange {
    /// A change that names identities another way than the protocol spells them, or inserts or
    /// deletes nothing: the reason, naming what was wrong.
    public struct Malformed: Error, Hashable, Sendable, CustomStringConvertible {
        /// What was wrong.
        public var description: String
    }

    /// The wire form of an operation of the merge core.
    public init(_ operation: TextOperation) {
        self.init(
            insertions: operation.insertions.map {
                Insertion(
                    id: $0.id.description, left: $0.originLeft?.description, right: $0.originRight?.description,
                    content: String(String.UnicodeScalarView($0.content)))
            },
            deletions: operation.deletions.map { Deletion(start: $0.start.description, count: $0.count) })
    }

    /// The operation of the merge core this change spells: identities in their one spelling
    /// (`<16 lowercase hex digits>.<seq>`, no sign or leading zero), so that every replica names
    /// a scalar alike; every insertion inserts something and every deletion deletes something.
    public func operation() throws(Malformed) -> TextOperation {
        func id(_ text: String) throws(Malformed) -> TextID {
            guard let id = TextID(Substring(text)), id.description == text else {
                throw Malformed(description: "names \(text.prefix(64).debugDescription), not an identity <16 lowercase hex digits>.<seq>")
            }
            return id
        }
        var operation = TextOperation()
        operation.insertions.reserveCapacity(insertions.count)
        for insertion in insertions {
            let content = Array(insertion.content.unicodeScalars)
            guard !content.isEmpty else { throw Malformed(description: "inserts nothing at \(insertion.id.prefix(64).debugDescription)") }
            operation.insertions.append(
                TextOperation.Insertion(
                    id: try id(insertion.id), originLeft: try insertion.left.map(id), originRight: try insertion.right.map(id), content: content))
        }
        for deletion in deletions {
            guard deletion.count > 0 else { throw Malformed(description: "deletes nothing at \(deletion.start.prefix(64).debugDescription)") }
            operation.deletions.append(TextOperation.Deletion(start: try id(deletion.start), count: deletion.count))
        }
        return operation
    }
}
