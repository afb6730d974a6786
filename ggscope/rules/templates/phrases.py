"""Planted-instruction phrasing in Chinese, Spanish, French, German and Russian.

Why: a prompt injection in a model card need not be English.  ``hidden`` reads English
phrasing; this table adds the same semantic families - overriding earlier instructions,
keeping something from the user, acting in secret, addressing the AI or agent reading
the text, steering every answer, asking for the system prompt, acting on a URL - in the
other languages model cards are most often written in, each pattern with the words one
of which it needs (``hidden`` runs a pattern only when one occurs).

What is deliberately left out, because a benign card says it: "visit / see / download
/ load from <URL>" (访问, visita, consultez, besuchen, загрузите ...), "send your
feedback to <URL>", "we always suggest ...".  A URL counts only after a verb that
executes something or beside the conversation, data or credentials being sent.

Contract: ``PHRASES[kind]`` is a list of (regex source, anchors); kinds are ``hidden``'s.
Compiled there with IGNORECASE; anchors are matched against the lowercased text.
"""
from __future__ import annotations

__all__ = ["PHRASES"]

_URL = r"(?:https?://|www\.)\S+"
_AI_ZH = r"(?:AI|人工智能|大?语言模型|LLM|助手|智能体|代理|机器人)"
_AI_ES = r"(?:IA|LLMs?|modelos?\s+de\s+lenguaje|asistentes?|agentes?|chatbots?|bots?)"
_AI_FR = r"(?:IA|LLMs?|mod[eè]les?\s+de\s+langage|assistants?|agents?|chatbots?|bots?)"
_AI_DE = r"(?:KI|LLMs?|Sprachmodell\w*|Assistent\w*|Agent\w*|Chatbots?|Bots?)"
_AI_RU = r"(?:ИИ|LLM|языков\w*\s+модел\w*|ассистент\w*|агент\w*|чат-?бот\w*|бот\w*|нейросет\w*)"
_SECRET_DATA = {   # what an exfiltration sends: the conversation, the user's data, credentials
    "zh": r"(?:对话|聊天记录|历史记录|用户数据|消息|凭据|密码|密钥|令牌)",
    "es": r"(?:conversaci[oó]n|historial|datos|mensajes|credenciales|contrase[nñ]as?|claves?|tokens?)",
    "fr": r"(?:conversation|historique|donn[ée]es|messages|identifiants|mots?\s+de\s+passe|cl[ée]s?|jetons?)",
    "de": r"(?:unterhaltung|verlauf|chatverlauf|daten|nachrichten|zugangsdaten|passw[öo]rter?|schl[üu]ssel|token)",
    "ru": r"(?:переписк\w*|истори\w*|диалог\w*|данн\w*|сообщени\w*|учётн\w*|учетн\w*|парол\w*|ключ\w*|токен\w*)",
}

PHRASES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "override": [
        (r"(?:忽略|无视|忘记|忘掉|不要理会|不要遵守)[^。\n]{0,12}?(?:指令|指示|提示词?|规则|说明|要求)",
         ("忽略", "无视", "忘记", "忘掉", "不要理会", "不要遵守")),
        (r"新的?(?:系统)?指令\s*[:：]", ("指令",)),
        (r"\b(?:ignora|ignore|ignorad|olvida|olvide|descarta|omite|haz\s+caso\s+omiso\s+de)\b[^.\n]{0,40}?"
         r"\b(?:instrucciones|indicaciones|[oó]rdenes|reglas|mensajes?|prompts?)\b", ("ignor", "olvid", "descart", "omit",
                                                                                    "caso omiso")),
        (r"\b(?:ignore[rz]?|oublie[rz]?|n[ée]glige[rz]?|fais\s+abstraction\s+de)\b[^.\n]{0,40}?"
         r"\b(?:instructions?|consignes?|r[eè]gles|directives?|prompts?)\b", ("ignor", "oubli", "néglig", "neglig",
                                                                             "abstraction")),
        (r"\b(?:nuevas\s+instrucciones|nouvelles\s+(?:instructions|consignes)|neue\s+anweisungen)\s*:",
         ("nuevas instrucciones", "nouvelles", "neue anweisungen")),
        (r"\b(?:ignoriere|ignorieren\s+sie|ignoriert|vergiss|vergessen\s+sie|missachte|missachten\s+sie)\b[^.\n]{0,40}?"
         r"\b(?:anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben|prompts?)\b",
         ("ignorier", "vergiss", "vergessen", "missacht")),
        (r"\b(?:vorherigen?|bisherigen?|obigen?|vorigen?|fr[üu]heren?|alle)\b[^.\n]{0,30}?"
         r"\b(?:anweisungen|instruktionen|befehle|regeln|vorgaben)\b[^.\n]{0,20}?\b(?:ignorieren|vergessen|missachten)\b",
         ("ignorieren", "vergessen", "missachten")),
        (r"\b(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|не\s+обращай(?:те)?\s+внимания\s+на)\b"
         r"[^.\n]{0,40}?(?:инструкци|указани|правил|промпт|подсказк)", ("игнорир", "проигнорир", "забуд", "не обращай")),
        (r"\bнов(?:ые|ая)\s+(?:системн(?:ые|ая)\s+)?инструкци(?:и|я)\s*:", ("инструкци",)),
    ],
    "covert": [
        (r"(?:不要|别|切勿|不得|不可)(?:告诉|告知|透露给?|通知|提醒)[^。\n]{0,12}?(?:用户|使用者|任何人|他们)",
         ("不要", "别", "切勿", "不得", "不可")),
        (r"(?:瞒着|隐瞒|对)(?:用户|使用者)(?:保密|隐瞒)?", ("瞒着", "隐瞒", "保密")),
        (r"\b(?:no|nunca|jam[aá]s)\s+(?:le\s+|les\s+)?(?:digas|diga|dig[aá]is|informes?|reveles?|menciones?|cuentes?|"
         r"notifiques?|avises?)\b[^.\n]{0,40}?\b(?:usuari[oa]s?|nadie)\b", ("usuari", "nadie")),
        (r"\bsin\s+(?:avisar|informar|notificar|dec[ií]rselo)\s+(?:a[l]?\s+)?(?:los\s+|las\s+)?(?:usuari[oa]s?|nadie)\b|"
         r"\bsin\s+que\s+(?:el|la|los|las)\s+usuari[oa]s?\s+lo\s+sepan?\b", ("sin ",)),
        (r"\bne\s+(?:le\s+|la\s+|les\s+|leur\s+|lui\s+)?(?:dis|dites|r[ée]v[eè]le[zs]?|informe[zs]?|signale[zs]?|"
         r"mentionne[zs]?)\s+(?:rien|pas|jamais)\b[^.\n]{0,40}?\b(?:l['’]utilisat(?:eur|rice)|utilisateurs?|personne)\b",
         ("ne ",)),
        (r"\bsans\s+(?:pr[ée]venir|avertir|informer|le\s+dire\s+[àa])\s+(?:l['’]utilisat(?:eur|rice)|les\s+utilisateurs|"
         r"personne)\b|\b[àa]\s+l['’]insu\s+de\s+l['’]utilisat(?:eur|rice)\b", ("sans ", "insu")),
        (r"\b(?:sag|sage|sagen\s+sie|erz[äa]hle?|verrate|verraten\s+sie|informiere|informieren\s+sie)\b[^.\n]{0,30}?"
         r"\b(?:de[mn]\s+(?:be)?nutzer(?:in|n)?|niemandem)\b[^.\n]{0,30}?\b(?:nicht|nichts|niemals|nie)\b",
         ("nutzer", "niemandem")),
        (r"\bohne\b[^.\n]{0,30}?\b(?:(?:be)?nutzer(?:in|n)?|niemanden)\b[^.\n]{0,20}?"
         r"\bzu\s+(?:informieren|benachrichtigen|sagen|warnen|fragen)\b", ("ohne",)),
        (r"\bне\s+(?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|раскрывай|раскрывайте)\b[^.\n]{0,40}?"
         r"(?:пользовател\w*|никому)", ("пользовател", "никому")),
        (r"\bбез\s+(?:ведома|уведомления|предупреждения)\s+пользовател\w*|\bскрой(?:те)?\b[^.\n]{0,30}?"
         r"\bот\s+пользовател\w*", ("без ", "скрой")),
    ],
    "stealth": [
        (r"(?:秘密地|偷偷地?|悄悄地|暗中|私下里?)(?:发送|添加|插入|修改|替换|转发|复制|执行|记录)",
         ("秘密", "偷偷", "悄悄", "暗中", "私下")),
        (r"\b(?:en\s+secreto|secretamente|a\s+escondidas|sigilosamente)\b", ("secret", "escondidas", "sigilos")),
        (r"\b(?:secr[eè]tement|en\s+secret|en\s+cachette|subrepticement|[àa]\s+son\s+insu)\b",
         ("secr", "cachette", "subreptic", "insu")),
        (r"\b(?:heimlich|insgeheim|unbemerkt|stillschweigend)\b", ("heimlich", "insgeheim", "unbemerkt", "stillschweig")),
        (r"\b(?:тайно|втайне|незаметно|скрытно)\b", ("тайн", "незаметн", "скрытн")),
    ],
    "agent": [
        (_AI_ZH + r"[^。\n]{0,12}?(?:阅读|读到|看到|处理|解析)(?:此|这|本)(?:段|条|个|份|篇)?(?:文字|文本|文件|消息|说明|内容|"
         r"模型卡)|(?:阅读|读到|看到|处理|解析)(?:此|这|本)(?:段|条|个|份|篇)?(?:文字|文本|文件|消息|说明|内容|模型卡)的\s*"
         + _AI_ZH, ("阅读", "读到", "看到", "处理", "解析")),
        (r"(?:致|写给)(?:所有|全体)?的?\s*" + _AI_ZH + r"|(?:给|致)(?:所有|全体)?的?\s*" + _AI_ZH +
         r"[^。\n]{0,6}?的(?:说明|指令|消息|提示|备注)", ("致", "写给", "给")),
        (r"\b" + _AI_ES + r"\b[^.\n]{0,20}?\b(?:que\s+)?(?:lea[ns]?|leyendo|procese[ns]?|procesando)\s+"
         r"(?:esto|este\s+(?:texto|archivo|fichero|mensaje|documento))\b|"
         r"\b(?:nota|mensaje|instrucciones?)\s+(?:para|a)\s+(?:todos\s+)?(?:los\s+|las\s+)?" + _AI_ES + r"\b",
         ("esto", "este", "nota", "mensaje", "instruccion")),
        (r"\b" + _AI_FR + r"\b[^.\n]{0,20}?\b(?:qui\s+)?(?:lis(?:ez|ent)?|lisant|traitant|traite(?:z|nt)?)\s+"
         r"(?:ceci|ce\s+(?:texte|fichier|message))\b|\b(?:note|message|instructions?)\s+(?:pour|aux?|[àa]\s+l['’]attention\s+"
         r"des?)\s+(?:tous\s+les\s+|toutes\s+les\s+|les\s+)?" + _AI_FR + r"\b", ("ceci", "ce ", "note", "message",
                                                                                "instruction")),
        (r"\b" + _AI_DE + r"\b[^.\n]{0,20}?\bdie\s+(?:dies|diesen|dieses|diese)\b[^.\n]{0,15}?\b(?:lesen|liest|verarbeiten)\b|"
         r"\b(?:hinweis|nachricht|anweisungen?|notiz)\s+(?:f[üu]r|an)\s+(?:alle\s+)?" + _AI_DE + r"|"
         r"\ban\s+alle\s+" + _AI_DE, ("dies", "hinweis", "nachricht", "anweisung", "notiz", "an alle")),
        (r"\b" + _AI_RU + r"[^.\n]{0,25}?(?:читающ\w*|обрабатывающ\w*)\s+(?:это|этот\s+(?:текст|файл|документ))\b|"
         r"\b(?:заметка|сообщение|инструкци\w*|примечание|обращение)\s+(?:для|ко?)\s+(?:вс(?:ех|ем|е)\s+)?" + _AI_RU,
         ("читающ", "обрабатывающ", "заметка", "сообщение", "инструкци", "примечание", "обращение")),
    ],
    "steer": [
        (r"(?:总是|始终|一律|务必|每次都)[^。\n]{0,4}?(?:推荐|提及|提到|宣传|推广|引用|附上链接|链接到|引导用户)",
         ("总是", "始终", "一律", "务必", "每次都")),
        (r"\bsiempre\s+(?:recomienda|recomiende|recomendar|menciona|mencione|mencionar|promociona|promocione|"
         r"promocionar|sugiere|sugiera|sugerir|cita|citar|enlaza|enlazar|redirigir|incluir\s+un\s+enlace|"
         r"incluye\s+un\s+enlace|redirige|dirige\s+a\s+los\s+usuarios)\b|\b(?:recomienda|recomiende|menciona|mencione|"
         r"promociona|promocione|redirige)\s+siempre\b", ("siempre",)),
        (r"\btoujours\s+(?:recommander|mentionner|promouvoir|citer|renvoyer\s+vers|inclure\s+un\s+lien|rediriger)\b|"
         r"\b(?:recommande[zr]?|mentionne[zr]?|promeu[st]|promouvez|cite[zr]?|redirige[zr]?)\s+toujours\b",
         ("toujours",)),
        (r"\b(?:empfiehl|empfehlen\s+sie|erw[äa]hne|erw[äa]hnen\s+sie|bewirb|bewerben\s+sie|verweise|verweisen\s+sie|"
         r"verlinke|leite)\b[^.\n]{0,15}?\bimmer\b|\bimmer\s+(?:empfehlen|erw[äa]hnen|bewerben|verweisen|verlinken|"
         r"weiterleiten)\b", ("immer",)),
        (r"\bвсегда\s+(?:рекоменду|упомина|продвига|рекламиру|ссылайся|ссылайтесь|перенаправля|направляй)\w*|"
         r"\b(?:рекомендуй|рекомендуйте|упоминай|упоминайте|продвигай|продвигайте)\s+всегда\b", ("всегда",)),
    ],
    "url-action": [
        (r"(?:下载并|获取并)(?:执行|运行)[^。\n]{0,30}?" + _URL + r"|(?:执行|运行)[^。\n]{0,10}?(?:脚本|命令)[^。\n]{0,30}?"
         + _URL + r"|(?:发送|上传|转发|提交)[^。\n]{0,20}?" + _SECRET_DATA["zh"] + r"[^。\n]{0,30}?" + _URL
         + r"|" + _SECRET_DATA["zh"] + r"[^。\n]{0,10}?(?:发送|上传|转发)(?:到|至|给)[^。\n]{0,10}?" + _URL,
         ("http", "www.")),
        (r"\b(?:ejecuta|ejecute|descarga\s+y\s+ejecuta)\b[^.\n]{0,60}?" + _URL + r"|\b(?:env[ií]a|env[ií]e|sube|suba|"
         r"manda|mande|reenv[ií]a|exfiltra)\b[^.\n]{0,40}?\b" + _SECRET_DATA["es"] + r"\b[^.\n]{0,40}?" + _URL,
         ("http", "www.")),
        (r"\b(?:ex[ée]cute[zr]?|t[ée]l[ée]charge[zr]?\s+et\s+ex[ée]cute[zr]?)\b[^.\n]{0,60}?" + _URL + r"|"
         r"\b(?:envoie[zr]?|transmet[sz]?|transf[eè]re[zr]?|t[ée]l[ée]verse[zr]?|exfiltre[zr]?)\b[^.\n]{0,40}?\b"
         + _SECRET_DATA["fr"] + r"\b[^.\n]{0,40}?" + _URL, ("http", "www.")),
        (r"\b(?:f[üu]hre|f[üu]hren\s+sie)\b[^.\n]{0,60}?" + _URL + r"[^.\n]{0,20}?\baus\b|\b(?:sende|senden\s+sie|schicke|"
         r"schicken\s+sie|lade|laden\s+sie|[üu]bermittle|leite)\b[^.\n]{0,40}?\b" + _SECRET_DATA["de"] +
         r"\b[^.\n]{0,40}?" + _URL, ("http", "www.")),
        (r"\b(?:выполни|выполните|запусти|запустите|скачай\s+и\s+запусти)\b[^.\n]{0,60}?" + _URL + r"|"
         r"\b(?:отправь|отправьте|перешли|перешлите|отошли|отошлите)\b[^.\n]{0,40}?" + _SECRET_DATA["ru"] +
         r"[^.\n]{0,40}?" + _URL, ("http", "www.")),
    ],
    "extract": [
        (r"(?:输出|打印|显示|泄露|重复|透露|告诉我)[^。\n]{0,10}?(?:系统提示词?|隐藏(?:的)?指令|开发者消息)",
         ("系统提示", "隐藏", "开发者消息")),
        (r"\b(?:revela|muestra|imprime|repite|filtra)\b[^.\n]{0,30}?\b(?:prompt\s+del\s+sistema|instrucciones\s+ocultas|"
         r"mensaje\s+del\s+desarrollador)\b", ("prompt del sistema", "ocultas", "desarrollador")),
        (r"\b(?:r[ée]v[eè]le|affiche|imprime|r[ée]p[eè]te|divulgue)\w*\b[^.\n]{0,30}?\b(?:prompt\s+syst[eè]me|"
         r"invite\s+syst[eè]me|instructions\s+cach[ée]es|message\s+du\s+d[ée]veloppeur)\b",
         ("système", "systeme", "cachées", "cachees", "développeur", "developpeur")),
        (r"\b(?:gib|zeige|drucke|wiederhole|verrate)\w*\b[^.\n]{0,30}?\b(?:system-?prompt|versteckten?\s+anweisungen|"
         r"entwicklernachricht)\w*", ("systemprompt", "system-prompt", "versteckt", "entwicklernachricht")),
        (r"\b(?:выведи|покажи|повтори|раскрой|напечатай)\w*\b[^.\n]{0,30}?(?:системн\w+\s+(?:промпт|подсказк|инструкци)\w*|"
         r"скрыт\w+\s+инструкци\w*)", ("системн", "скрыт")),
    ],
}
