import MacroTesting
import OpenSwiftDataMacros
import Testing

@Suite(.macros(["Predicate": PredicateMacro.self, "Expression": PredicateExpressionMacro.self], record: .never))
struct PredicateMacroExpansionTests {
    @Test func implicitMemberAndCapturedValue() {
        assertMacro {
            """
            #Predicate<Message> { message in
                message.syncStatus == .pending || (message.syncStatus == .failed && message.retryCount < limit)
            }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({ message in
                    _$PredicateExpressions.build_Disjunction(lhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(message), keyPath: \.syncStatus), rhs: _$PredicateExpressions.build_Arg(.pending)), rhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(message), keyPath: \.syncStatus), rhs: _$PredicateExpressions.build_Arg(.failed)), rhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(message), keyPath: \.retryCount), rhs: _$PredicateExpressions.build_Arg(limit), op: .lessThan)))
                })
            """#
        }
    }

    @Test func staticMembersAndComputedConstants() {
        assertMacro {
            """
            #Predicate<Message> { $0.createdAt < Date.now && $0.status != Status.done && $0.sentAt ?? Date.distantPast > Date(timeIntervalSinceNow: -60) }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({
                    _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.createdAt), rhs: _$PredicateExpressions.build_Arg(Date.now), op: .lessThan), rhs: _$PredicateExpressions.build_NotEqual(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.status), rhs: _$PredicateExpressions.build_Arg(Status.done))), rhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_NilCoalesce(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.sentAt), rhs: _$PredicateExpressions.build_Arg(Date.distantPast)), rhs: _$PredicateExpressions.build_Arg(Date(timeIntervalSinceNow: -60)), op: .greaterThan))
                })
            """#
        }
    }

    @Test func nestedClosures() {
        assertMacro {
            """
            #Predicate<Chat> { chat in chat.messages.contains { $0.isUnread && $0.author == chat.owner } && chat.tags.allSatisfy { $0 != "spam" } && chat.messages.filter { $0.isUnread }.count > 2 }
            """
        } expansion: {
            #"""
            _$Predicate<Chat>({ chat in
                    _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_contains(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(chat), keyPath: \.messages)) {
                                _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.isUnread), rhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.author), rhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(chat), keyPath: \.owner)))
                            }, rhs: _$PredicateExpressions.build_allSatisfy(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(chat), keyPath: \.tags)) {
                                _$PredicateExpressions.build_NotEqual(lhs: _$PredicateExpressions.build_Arg($0), rhs: _$PredicateExpressions.build_Arg("spam"))
                            }), rhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_filter(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(chat), keyPath: \.messages)) {
                                    _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.isUnread)
                                }, keyPath: \.count), rhs: _$PredicateExpressions.build_Arg(2), op: .greaterThan))
                })
            """#
        }
    }

    @Test func optionalChaining() {
        assertMacro {
            """
            #Predicate<Message> { $0.conversation?.title.hasPrefix("Re:") == true && $0.attachments?.contains { $0.size > 10 } ?? false }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({
                    _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_flatMap(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.conversation)) { _osd_wrapped0 in
                                _$PredicateExpressions.build_starts(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg(_osd_wrapped0), keyPath: \.title), with: _$PredicateExpressions.build_Arg("Re:"))
                            }, rhs: _$PredicateExpressions.build_Arg(true)), rhs: _$PredicateExpressions.build_NilCoalesce(lhs: _$PredicateExpressions.build_flatMap(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.attachments)) { _osd_wrapped1 in
                                _$PredicateExpressions.build_contains(_$PredicateExpressions.build_Arg(_osd_wrapped1)) {
                                    _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.size), rhs: _$PredicateExpressions.build_Arg(10), op: .greaterThan)
                                }
                            }, rhs: _$PredicateExpressions.build_Arg(false)))
                })
            """#
        }
    }

    @Test func ifLetTernaryAndUnwrap() {
        assertMacro {
            """
            #Predicate<Message> { (if let date = $0.sentAt { date > cutoff } else { $0.isDraft }) && ($0.isPinned ? $0.score : 0) > 2 && $0.conversation!.isMuted == false }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({
                    _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_NilCoalesce(lhs: _$PredicateExpressions.build_flatMap(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.sentAt)) { date in
                                    _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_Arg(date), rhs: _$PredicateExpressions.build_Arg(cutoff), op: .greaterThan)
                                }, rhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.isDraft)), rhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_Conditional(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.isPinned), _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.score), _$PredicateExpressions.build_Arg(0)), rhs: _$PredicateExpressions.build_Arg(2), op: .greaterThan)), rhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_ForcedUnwrap(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.conversation)), keyPath: \.isMuted), rhs: _$PredicateExpressions.build_Arg(false)))
                })
            """#
        }
    }

    @Test func stringAndCollectionFunctions() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.localizedStandardContains(query) && $0.text.hasSuffix("!") && !$0.tags.isEmpty && ids.contains($0.id) && ($0.scores.max() ?? 0) > -1 && $0.counts["a", default: 0] % 2 == 0 }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({
                    _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_Conjunction(lhs: _$PredicateExpressions.build_localizedStandardContains(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.text), _$PredicateExpressions.build_Arg(query)), rhs: _$PredicateExpressions.build_hasSuffix(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.text), _$PredicateExpressions.build_Arg("!"))), rhs: _$PredicateExpressions.build_Negation(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.tags), keyPath: \.isEmpty))), rhs: _$PredicateExpressions.build_contains(_$PredicateExpressions.build_Arg(ids), _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.id))), rhs: _$PredicateExpressions.build_Comparison(lhs: _$PredicateExpressions.build_NilCoalesce(lhs: _$PredicateExpressions.build_max(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.scores)), rhs: _$PredicateExpressions.build_Arg(0)), rhs: _$PredicateExpressions.build_Arg(-1), op: .greaterThan)), rhs: _$PredicateExpressions.build_Equal(lhs: _$PredicateExpressions.build_Remainder(lhs: _$PredicateExpressions.build_subscript(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.counts), _$PredicateExpressions.build_Arg("a"), default: _$PredicateExpressions.build_Arg(0)), rhs: _$PredicateExpressions.build_Arg(2)), rhs: _$PredicateExpressions.build_Arg(0)))
                })
            """#
        }
    }

    @Test func expressionMacro() {
        assertMacro {
            """
            #Expression<Message, Int> { $0.retryCount * 2 + 1 }
            """
        } expansion: {
            #"""
            _$Expression<Message, Int>({
                    _$PredicateExpressions.build_Arithmetic(lhs: _$PredicateExpressions.build_Arithmetic(lhs: _$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.retryCount), rhs: _$PredicateExpressions.build_Arg(2), op: .multiply), rhs: _$PredicateExpressions.build_Arg(1), op: .add)
                })
            """#
        }
    }

    @Test func unsupportedFunctionIsDiagnosedWithFixIt() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.localizedCaseInsensitiveContains("x") }
            """
        } diagnostics: {
            """
            #Predicate<Message> { $0.text.localizedCaseInsensitiveContains("x") }
                                          ┬───────────────────────────────
                                          ╰─ 🛑 The localizedCaseInsensitiveContains(_:) function is not supported in this predicate
                                             ✏️ use localizedStandardContains(_:), which ignores case and diacritics
            """
        } fixes: {
            """
            #Predicate<Message> { $0.text.localizedStandardContains("x") }
            """
        } expansion: {
            #"""
            _$Predicate<Message>({
                    _$PredicateExpressions.build_localizedStandardContains(_$PredicateExpressions.build_KeyPath(root: _$PredicateExpressions.build_Arg($0), keyPath: \.text), _$PredicateExpressions.build_Arg("x"))
                })
            """#
        }
    }

    @Test func unsupportedMethodOnInput() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.uppercased() == "X" }
            """
        } diagnostics: {
            """
            #Predicate<Message> { $0.text.uppercased() == "X" }
                                          ┬─────────
                                          ╰─ 🛑 The uppercased() function is not supported in this predicate
            """
        }
    }

    @Test func multipleStatements() {
        assertMacro {
            """
            #Predicate<Message> { message in
                let limit = 3
                return message.retryCount < limit
            }
            """
        } diagnostics: {
            """
            #Predicate<Message> { message in
                let limit = 3
                ╰─ 🛑 A body of more than one statement is not supported in this predicate
                return message.retryCount < limit
            }
            """
        }
    }
}
