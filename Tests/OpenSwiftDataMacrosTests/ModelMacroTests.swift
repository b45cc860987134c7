import MacroTesting
import OpenSwiftDataMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

/// The macros as the `OpenSwiftData` module declares them. `@Model` is registered with the
/// conformances its `@attached(extension, conformances: Observable, PersistentModel)` role asks
/// for, so that the extension role is expanded too.
private let macroSpecs: [String: MacroSpec] = [
    "Model": MacroSpec(
        type: ModelMacro.self,
        conformances: [
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("Observable"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("PersistentModel"))),
        ]
    ),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: AttributeMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
    "Unique": MacroSpec(type: UniqueMacro.self),
    "Index": MacroSpec(type: IndexMacro.self),
]

@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroExpansionTests {
    @Test func plainModelWithDesignatedInit() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String
                var age: Int

                init(name: String, age: Int) {
                    self.name = name
                    self.age = age
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                @OpenSwiftData._PersistedProperty(index: 0)
                var name: String
                @OpenSwiftData._PersistedProperty(index: 1)
                var age: Int

                init(name: String, age: Int) {
                    self.name = name
                    self.age = age
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "age", keypath: \Person.age, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._name = _SwiftDataNoType()
                    self._age = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    /// swift-syntax's test expansion drops a property's initializer once an accessor macro adds
    /// `get`/`set` (so the snapshot shows `var count {`); the compiler keeps it and hands it to the
    /// `init` accessor. The default value the schema sees is the `defaultValue: 0` in the metadata.
    @Test func defaultValueWithoutTypeAnnotation() {
        assertMacro {
            """
            @Model
            final class Counter {
                var count = 0

                init() {}
            }
            """
        } expansion: {
            #"""
            final class Counter {
                @OpenSwiftData._PersistedProperty(index: 0)
                var count = 0

                init() {}

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Counter> = Counter._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Counter> = Counter._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Counter> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "count", keypath: \Counter.count, defaultValue: 0, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Counter>) {
                    self._count = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Counter, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Counter, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Counter: Observation.Observable {
            }

            nonisolated extension Counter: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func enumDefaultWithTypeAnnotation() {
        assertMacro {
            """
            @Model
            final class Order {
                var status: Status = .pending

                init() {}
            }
            """
        } expansion: {
            #"""
            final class Order {
                @OpenSwiftData._PersistedProperty(index: 0)
                var status: Status = .pending

                init() {}

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Order> = Order._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Order> = Order._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Order> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "status", keypath: \Order.status, defaultValue: (.pending as Status), metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Order>) {
                    self._status = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Order, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Order, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Order: Observation.Observable {
            }

            nonisolated extension Order: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func optionalProperty() {
        assertMacro {
            """
            @Model
            final class Person {
                var nickname: String?

                init(nickname: String? = nil) {
                    self.nickname = nickname
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                @OpenSwiftData._PersistedProperty(index: 0)
                var nickname: String?

                init(nickname: String? = nil) {
                    self.nickname = nickname
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "nickname", keypath: \Person.nickname, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._nickname = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func attributeWithUniqueAndOriginalName() {
        assertMacro {
            """
            @Model
            final class Person {
                @Attribute(.unique, originalName: "old") var email: String

                init(email: String) {
                    self.email = email
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                @OpenSwiftData._PersistedProperty(index: 0) var email: String

                init(email: String) {
                    self.email = email
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "email", keypath: \Person.email, defaultValue: nil, metadata: _$Attribute(.unique, originalName: "old"))
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._email = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func transientPropertyIsNotPersisted() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String
                @Transient var cache = 0

                init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                @OpenSwiftData._PersistedProperty(index: 0)
                var name: String
                var cache = 0

                init(name: String) {
                    self.name = name
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._name = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func uniqueAndIndexInBody() {
        assertMacro {
            #"""
            @Model
            final class Person {
                #Unique<Person>([\.email], [\.first, \.last])
                #Index<Person>([\.name])

                var email: String
                var first: String
                var last: String
                var name: String

                init(email: String, first: String, last: String, name: String) {
                    self.email = email
                    self.first = first
                    self.last = last
                    self.name = name
                }
            }
            """#
        } expansion: {
            #"""
            final class Person {
                @OpenSwiftData._PersistedProperty(index: 0)

                var email: String
                @OpenSwiftData._PersistedProperty(index: 1)
                var first: String
                @OpenSwiftData._PersistedProperty(index: 2)
                var last: String
                @OpenSwiftData._PersistedProperty(index: 3)
                var name: String

                init(email: String, first: String, last: String, name: String) {
                    self.email = email
                    self.first = first
                    self.last = last
                    self.name = name
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "email", keypath: \Person.email, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "first", keypath: \Person.first, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "last", keypath: \Person.last, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._email = _SwiftDataNoType()
                    self._first = _SwiftDataNoType()
                    self._last = _SwiftDataNoType()
                    self._name = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }

                public nonisolated static var _$uniquenessConstraints: [[Swift.AnyKeyPath]] {
                    typealias _$Unique = OpenSwiftData.Schema.Unique<Person>
                    return _$Unique([\.email], [\.first, \.last])._$keyPathGroups
                }

                public nonisolated static var _$indices: [[Swift.AnyKeyPath]] {
                    typealias _$Index = OpenSwiftData.Schema.Index<Person>
                    return _$Index([\.name])._$keyPathGroups
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func publicModelClass() {
        assertMacro {
            """
            @Model
            public final class Person {
                public var name: String

                public init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            public final class Person {
                @OpenSwiftData._PersistedProperty(index: 0)
                public var name: String

                public init(name: String) {
                    self.name = name
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Person>) {
                    self._name = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Person, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Person: Observation.Observable {
            }

            nonisolated extension Person: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }
}

/// The hostile-names model (see `HostileNamesTests` in OpenSwiftDataTests): members named like
/// the generated code's locals, parameters, helpers and modules, and nested types named like
/// the standard-library types it uses. Every library and standard-library name in the expansion
/// is a type position qualified by its module, a `_$` name, or a member reached through the
/// class.
///
/// `@Model` names its peer macros through the module (`@OpenSwiftData._PersistedProperty`,
/// `@OpenSwiftData.Transient`), which swift-syntax's test expansion does not resolve (it looks
/// attached macros up by a plain identifier only); the compiler does. So the accessors of a
/// hostile property are checked by expanding `@_PersistedProperty` itself below.
@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroHygieneTests {
    @Test func hostilePropertyAccessors() {
        assertMacro {
            """
            final class HostileNames {
                struct KeyPath {}
                func type(of value: Int) -> String { "" }
                @_PersistedProperty(index: 0)
                var type: Element
                @_PersistedProperty(index: 1)
                var Swift: Int
            }
            """
        } expansion: {
            #"""
            final class HostileNames {
                struct KeyPath {}
                func type(of value: Int) -> String { "" }
                var type: Element {
                    @storageRestrictions(accesses: _$backingData, initializes: _type)
                    init(initialValue) {
                        HostileNames._$initializeValue(&_$backingData, at: 0, forKey: \.type, to: initialValue)
                        _type = _SwiftDataNoType()
                    }
                    get {
                        self.access(keyPath: HostileNames._$keyPath_type)
                        return self._$getValue(at: 0, forKey: HostileNames._$keyPath_type)
                    }
                    set {
                        self.withMutation(keyPath: HostileNames._$keyPath_type) {
                            self._$setValue(at: 0, forKey: HostileNames._$keyPath_type, to: newValue)
                        }
                    }
                }

                @OpenSwiftData.Transient private var _type: _SwiftDataNoType

                private static let _$keyPath_type = \HostileNames.type
                var Swift: Int {
                    @storageRestrictions(accesses: _$backingData, initializes: _Swift)
                    init(initialValue) {
                        HostileNames._$initializeValue(&_$backingData, at: 1, forKey: \.Swift, to: initialValue)
                        _Swift = _SwiftDataNoType()
                    }
                    get {
                        self.access(keyPath: HostileNames._$keyPath_Swift)
                        return self._$getValue(at: 1, forKey: HostileNames._$keyPath_Swift)
                    }
                    set {
                        self.withMutation(keyPath: HostileNames._$keyPath_Swift) {
                            self._$setValue(at: 1, forKey: HostileNames._$keyPath_Swift, to: newValue)
                        }
                    }
                }

                @OpenSwiftData.Transient private var _Swift: _SwiftDataNoType

                private static let _$keyPath_Swift = \HostileNames.Swift
            }
            """#
        }
    }

    /// A non-final class (as SwiftData's templates write models) expands as a final one: nothing
    /// generated needs `final` (`init(backingData:)` is `required`).
    @Test func nonFinalClass() {
        assertMacro {
            """
            @Model
            class Message {
                var text: String

                init(text: String) {
                    self.text = text
                }
            }
            """
        } expansion: {
            #"""
            class Message {
                @OpenSwiftData._PersistedProperty(index: 0)
                var text: String

                init(text: String) {
                    self.text = text
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Message> = Message._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Message> = Message._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Message> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated class var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "text", keypath: \Message.text, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Message>) {
                    self._text = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Message, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Message, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }

                public typealias _$Root = Message

                public nonisolated class var _$inheritedKeyPaths: [Swift.AnyKeyPath] {
                    []
                }

                public nonisolated static func _$keyPaths<_S: Message>(rootedAt _: _S.Type) -> [Swift.AnyKeyPath] {
                    [\_S.text]
                }

                public nonisolated class var _$uniquenessConstraints: [[Swift.AnyKeyPath]] {
                    typealias _$Unique = OpenSwiftData.Schema.Unique<Message>
                    return []
                }

                public nonisolated class var _$indices: [[Swift.AnyKeyPath]] {
                    typealias _$Index = OpenSwiftData.Schema.Index<Message>
                    return []
                }
            }

            nonisolated extension Message: Observation.Observable {
            }

            nonisolated extension Message: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func hostileNames() {
        assertMacro {
            #"""
            @Model
            final class HostileNames {
                #Unique<HostileNames>([\.key])
                #Index<HostileNames>([\.type])

                var type: Element
                var Swift: Int
                var OpenSwiftData: Bool = false
                var value: Int
                @Attribute(.unique) var key: String
                @Relationship(deleteRule: .cascade) var children: [Child] = []

                struct KeyPath {}
                struct Sendable {}
                enum Element: String, Codable {
                    case type, Swift
                }

                func type(of value: Int) -> String { "" }

                init(type: Element, key: String) {
                    self.type = type
                    self.Swift = 0
                    self.value = 0
                    self.key = key
                }
            }
            """#
        } expansion: {
            #"""
            final class HostileNames {
                @OpenSwiftData._PersistedProperty(index: 0)

                var type: Element
                @OpenSwiftData._PersistedProperty(index: 1)
                var Swift: Int
                @OpenSwiftData._PersistedProperty(index: 2)
                var OpenSwiftData: Bool = false
                @OpenSwiftData._PersistedProperty(index: 3)
                var value: Int
                @OpenSwiftData._PersistedProperty(index: 4) var key: String
                @Relationship(deleteRule: .cascade)
                @OpenSwiftData._PersistedProperty(index: 5) var children: [Child] = []

                struct KeyPath {}
                struct Sendable {}
                enum Element: String, Codable {
                    case type, Swift
                }

                func type(of value: Int) -> String { "" }

                init(type: Element, key: String) {
                    self.type = type
                    self.Swift = 0
                    self.value = 0
                    self.key = key
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<HostileNames> = HostileNames._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<HostileNames> = HostileNames._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<HostileNames> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "type", keypath: \HostileNames.type, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "Swift", keypath: \HostileNames.Swift, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "OpenSwiftData", keypath: \HostileNames.OpenSwiftData, defaultValue: (false as Bool), metadata: nil),
                        _$PropertyMetadata(name: "value", keypath: \HostileNames.value, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "key", keypath: \HostileNames.key, defaultValue: nil, metadata: _$Attribute(.unique)),
                        _$PropertyMetadata(name: "children", keypath: \HostileNames.children, defaultValue: ([] as [Child]), metadata: _$Relationship(deleteRule: .cascade))
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<HostileNames>) {
                    self._type = _SwiftDataNoType()
                    self._Swift = _SwiftDataNoType()
                    self._OpenSwiftData = _SwiftDataNoType()
                    self._value = _SwiftDataNoType()
                    self._key = _SwiftDataNoType()
                    self._children = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<HostileNames, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<HostileNames, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }

                public nonisolated static var _$uniquenessConstraints: [[Swift.AnyKeyPath]] {
                    typealias _$Unique = OpenSwiftData.Schema.Unique<HostileNames>
                    return _$Unique([\.key])._$keyPathGroups
                }

                public nonisolated static var _$indices: [[Swift.AnyKeyPath]] {
                    typealias _$Index = OpenSwiftData.Schema.Index<HostileNames>
                    return _$Index([\.type])._$keyPathGroups
                }
            }

            nonisolated extension HostileNames: Observation.Observable {
            }

            nonisolated extension HostileNames: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }
}

@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroDiagnosticTests {
    @Test func modelOnStruct() {
        assertMacro {
            """
            @Model
            struct Person {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Model
            ┬─────
            ╰─ 🛑 @Model can only be applied to a class
            struct Person {
                var name: String
            }
            """
        }
    }

    @Test func modelOnEnum() {
        assertMacro {
            """
            @Model
            enum Kind {
                case a, b
            }
            """
        } diagnostics: {
            """
            @Model
            ┬─────
            ╰─ 🛑 @Model can only be applied to a class
            enum Kind {
                case a, b
            }
            """
        }
    }

    @Test func modelOnGenericClass() {
        assertMacro {
            """
            @Model
            final class Box<Value> {
                var count: Int

                init(count: Int) {
                    self.count = count
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Box<Value> {
                           ┬──────
                           ╰─ 🛑 @Model cannot be applied to a generic class
                var count: Int

                init(count: Int) {
                    self.count = count
                }
            }
            """
        }
    }

    @Test func classWithoutInitializer() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String = ""
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                        ┬─────
                        ╰─ 🛑 @Model requires the class to declare a designated initializer
                var name: String = ""
            }
            """
        }
    }

    @Test func letPersistedProperty() {
        assertMacro {
            """
            @Model
            final class Entry {
                @Attribute(.unique) let id: UUID
                let createdAt: Date
                var title: String

                init(id: UUID, createdAt: Date, title: String) {
                    self.id = id
                    self.createdAt = createdAt
                    self.title = title
                }
            }
            """
        } expansion: {
            #"""
            final class Entry {
                let id: UUID
                let createdAt: Date
                @OpenSwiftData._PersistedProperty(index: 2)
                var title: String

                init(id: UUID, createdAt: Date, title: String) {
                    self.id = id
                    self.createdAt = createdAt
                    self.title = title
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Entry> = Entry._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Entry> = Entry._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Entry> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "id", keypath: \Entry.id, defaultValue: nil, metadata: _$Attribute(.unique)),
                        _$PropertyMetadata(name: "createdAt", keypath: \Entry.createdAt, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "title", keypath: \Entry.title, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Entry>) {
                    self._title = _SwiftDataNoType()
                    self.id = Entry._$constantValue(backingData, at: 0, forKey: \Entry.id)
                    self.createdAt = Entry._$constantValue(backingData, at: 1, forKey: \Entry.createdAt)
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Entry, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Entry, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Entry: Observation.Observable {
            }

            nonisolated extension Entry: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func letWithInitialValue() {
        assertMacro {
            """
            @Model
            final class Entry {
                let id = UUID()

                init() {}
            }
            """
        } diagnostics: {
            """
            @Model
            final class Entry {
                let id = UUID()
                ┬──
                ╰─ 🛑 a persisted 'let' property cannot have an initial value, because models loaded from the store skip your initializer; set it in init, or declare it with 'var'
                   ✏️ Replace 'let' with 'var'

                init() {}
            }
            """
        } fixes: {
            """
            @Model
            final class Entry {
                var id = UUID()

                init() {}
            }
            """
        } expansion: {
            #"""
            final class Entry {
                @OpenSwiftData._PersistedProperty(index: 0)
                var id = UUID()

                init() {}

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Entry> = Entry._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Entry> = Entry._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Entry> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "id", keypath: \Entry.id, defaultValue: UUID(), metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Entry>) {
                    self._id = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Entry, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Entry, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }
            }

            nonisolated extension Entry: Observation.Observable {
            }

            nonisolated extension Entry: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    @Test func propertyWithDidSet() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String {
                    didSet { print(name) }
                }

                init(name: String) {
                    self.name = name
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                var name: String {
                    ╰─ 🛑 willSet/didSet observers are not supported on persisted properties; move the logic into a method or mark the property @Transient
                    didSet { print(name) }
                }

                init(name: String) {
                    self.name = name
                }
            }
            """
        }
    }

    @Test func closureTypedProperty() {
        assertMacro {
            """
            @Model
            final class Person {
                var handler: () -> Void

                init(handler: @escaping () -> Void) {
                    self.handler = handler
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                var handler: () -> Void
                             ┬─────────
                             ╰─ 🛑 this property type cannot be stored: use a Codable value type, a collection of Codable values or another @Model class, or mark the property @Transient

                init(handler: @escaping () -> Void) {
                    self.handler = handler
                }
            }
            """
        }
    }

    @Test func transientWithoutDefault() {
        assertMacro {
            """
            @Model
            final class Person {
                @Transient var cache: Int

                init() {
                    cache = 0
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                @Transient var cache: Int
                               ┬─────────
                               ╰─ 🛑 a @Transient property needs a default value, because models loaded from the store skip your initializer

                init() {
                    cache = 0
                }
            }
            """
        }
    }

    @Test func implicitMemberDefaultWithoutType() {
        assertMacro {
            """
            @Model
            final class Order {
                var s = .pending

                init() {}
            }
            """
        } diagnostics: {
            """
            @Model
            final class Order {
                var s = .pending
                        ┬───────
                        ╰─ 🛑 a default value written as an implicit member ('.case') needs an explicit type annotation on the property

                init() {}
            }
            """
        }
    }
}

/// `@Model` as the compiler expands it on a subclass of a model: the class already conforms (it
/// inherits the conformances), so none is asked for.
private let subclassMacroSpecs: [String: MacroSpec] = [
    "Model": MacroSpec(type: ModelMacro.self, conformances: []),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: AttributeMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
]

@Suite(.macros(subclassMacroSpecs, record: .never))
struct ModelMacroSubclassTests {
    /// A subclass lists its own properties, overrides the backing data, `schemaMetadata` and
    /// `init(backingData:)`, observes its own properties and gets no conformance of its own.
    @Test func subclass() {
        assertMacro {
            """
            @Model
            final class Car: Vehicle {
                var doors: Int
                var sunroof: Bool = false

                init(name: String, doors: Int) {
                    self.doors = doors
                    super.init(name: name)
                }
            }
            """
        } expansion: {
            #"""
            final class Car: Vehicle {
                @OpenSwiftData._PersistedProperty(index: 0)
                var doors: Int
                @OpenSwiftData._PersistedProperty(index: 1)
                var sunroof: Bool = false

                init(name: String, doors: Int) {
                    self.doors = doors
                    super.init(name: name)
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Car> = Car._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Car> = Car._$makeInertBackingData()

                public override nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Vehicle._$Root> {
                    get {
                        Car._$adoptInitializedValues(Car._$takeInitializedValues(&self._$backingData), of: self)
                        return super.persistentBackingData
                    }
                    set {
                        super.persistentBackingData = newValue
                    }
                }

                public override nonisolated class var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "doors", keypath: \Car.doors, defaultValue: nil, metadata: nil),
                        _$PropertyMetadata(name: "sunroof", keypath: \Car.sunroof, defaultValue: (false as Bool), metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Vehicle._$Root>) {
                    self._doors = _SwiftDataNoType()
                    self._sunroof = _SwiftDataNoType()
                    super.init(backingData: backingData)
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Car, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Car, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public override nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                    super._$notifyObservers(ofChangeTo: keyPath)
                }

                public override nonisolated class var _$inheritedKeyPaths: [Swift.AnyKeyPath] {
                    Vehicle._$keyPaths(rootedAt: Car.self)
                }
            }
            """#
        }
    }
}

@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroSuperclassDiagnosticTests {
    /// A root model that adopts protocols gets a check that its first inherited type is not a
    /// class (`any` of a class does not compile, naming the rule in the expansion).
    @Test func rootWithProtocols() {
        assertMacro {
            """
            @Model
            final class Tag: Identifiable {
                var name: String

                init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            final class Tag: Identifiable {
                @OpenSwiftData._PersistedProperty(index: 0)
                var name: String

                init(name: String) {
                    self.name = name
                }

                @OpenSwiftData.Transient
                nonisolated(unsafe) private var _$backingData: any OpenSwiftData.BackingData<Tag> = Tag._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Tag> = Tag._$makeInertBackingData()

                public nonisolated var persistentBackingData: any OpenSwiftData.BackingData<Tag> {
                    get {
                        self._$backingData
                    }
                    set {
                        self._$backingData = newValue
                    }
                }

                public nonisolated static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    typealias _$PropertyMetadata = OpenSwiftData.Schema.PropertyMetadata
                    typealias _$Attribute = OpenSwiftData.Schema.Attribute
                    typealias _$Relationship = OpenSwiftData.Schema.Relationship
                    return [
                        _$PropertyMetadata(name: "name", keypath: \Tag.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required nonisolated init(backingData: any OpenSwiftData.BackingData<Tag>) {
                    self._name = _SwiftDataNoType()
                    self._$backingData = backingData
                }

                @OpenSwiftData.Transient
                private let _$observationRegistrar: Observation.ObservationRegistrar = .init()

                internal nonisolated func access<_M>(keyPath: Swift.KeyPath<Tag, _M>) {
                    self._$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: Swift.KeyPath<Tag, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try self._$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: Swift.AnyKeyPath) {
                    self._$observationRegistrar._$notifyChange(of: self, at: keyPath)
                }

                nonisolated public struct _SwiftDataNoType: Swift.Sendable {
                }

                private typealias _$SuperclassMustBeAModel = any Identifiable
            }

            nonisolated extension Tag: Observation.Observable {
            }

            nonisolated extension Tag: OpenSwiftData.PersistentModel {
            }
            """#
        }
    }

    /// Any superclass that is not a model (here declared elsewhere, unknown to the macro) is an
    /// error at the user's inheritance clause when the class's members show it has a superclass:
    /// the compiler asked for `PersistentModel`, so that superclass is not a model.
    @Test func unknownNonModelSuperclass() {
        assertMacro {
            """
            @Model
            class Dog: Animal {
                var breed: String

                init(breed: String) {
                    self.breed = breed
                    super.init(legs: 4)
                }
            }
            """
        } diagnostics: {
            """
            @Model
            class Dog: Animal {
                       ┬─────
                       ╰─ 🛑 a @Model class can inherit only from another @Model class; this superclass is not a model
                var breed: String

                init(breed: String) {
                    self.breed = breed
                    super.init(legs: 4)
                }
            }
            """
        }
        assertMacro {
            """
            @Model
            final class Sheep: Animal {
                var wool: Int = 0
                override func speak() -> String { "baa" }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Sheep: Animal {
                               ┬─────
                               ╰─ 🛑 a @Model class can inherit only from another @Model class; this superclass is not a model
                var wool: Int = 0
                override func speak() -> String { "baa" }
            }
            """
        }
    }

    /// A class that is not a model cannot be a model's superclass: the error points at it.
    @Test func nonModelSuperclass() {
        assertMacro {
            """
            @Model
            final class Note: NSObject {
                var text: String

                init(text: String) {
                    self.text = text
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Note: NSObject {
                              ┬───────
                              ╰─ 🛑 a @Model class can inherit only from another @Model class; this superclass is not a model
                var text: String

                init(text: String) {
                    self.text = text
                }
            }
            """
        }
    }
}
